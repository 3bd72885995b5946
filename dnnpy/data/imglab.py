"""dlib's imglab XML datasets (dlib/data_io/image_dataset_metadata.cpp, load_image_dataset.h).

The metadata types are dlib's ``image_dataset_metadata`` ones: a ``dataset`` (name, comment,
images), an ``image`` (filename, optional width/height, boxes) and a ``box`` (rect, label,
parts, flags, pose, detection_score, angle, gender, age). ``load_image_dataset_metadata`` reads
a file as dlib does (same attribute names, defaults, strict number parsing, errors for a wrong
root tag, missing required attributes and duplicate part names); ``save_image_dataset_metadata``
writes dlib's layout byte for byte for plain strings (dlib reads it back), atomically.

``load_image_dataset`` turns the metadata into per-image lists of ``mmod_rect`` with dlib's
rules (ignored boxes become ``ignored_mmod_rect``, labels copied, the ``image_dataset_file``
filters) and loads each image with a ``loader(path)``, file names relative to the XML's folder.

Differences from dlib, all on input dlib cannot handle. dlib decodes the five XML entities in
text but not in attribute values, and writes both raw. dnnpy writes ``& < >`` in names,
comments and labels as entities (dlib decodes them; its own raw ones make it reject its file);
in attributes (file and part names) it writes ``&`` and ``"`` raw, as dlib reads them, and
``< > '`` as entities (dlib cannot hold them at all: its reader keeps the entity text). When
reading, a ``&`` that starts no entity is taken as a literal ``&`` (dlib's raw attributes),
where a strict XML parser would stop. Files are decoded as UTF-8 whatever the declaration says
(dlib writes the bytes of its strings under an ISO-8859-1 declaration, and Python strings reach
it as UTF-8), falling back to ISO-8859-1 when the bytes are not UTF-8; a UTF-8 byte-order mark
is accepted. dlib also writes ``image_metadata_stylesheet.xsl`` (for viewing the XML in a
browser) next to the file; dnnpy does not.
"""

from __future__ import annotations

import math
import os
import re
from xml.parsers import expat

import numpy as np

from ..geometry import ignored_mmod_rect, mmod_rect, rectangle
from ..image.io import load_image
from ..image.pyramid import pyramid_down
from ..atomic import atomic_write

__all__ = ["box", "image", "dataset", "ImageDatasetError", "load_image_dataset_metadata",
           "save_image_dataset_metadata", "image_dataset_file", "image_dataset_boxes",
           "load_image_dataset", "default_loader", "shrink_big_image", "UNKNOWN", "MALE", "FEMALE"]

# dlib's gender_t, as the strings its XML uses
UNKNOWN, MALE, FEMALE = "unknown", "male", "female"
_GENDERS = (UNKNOWN, MALE, FEMALE)


class ImageDatasetError(ValueError):
    """An imglab XML file that cannot be read as dlib reads it. ``path``, ``line`` (1-based,
    None when unknown) and ``field`` (e.g. ``"<box> attribute 'top'"``) say where."""

    def __init__(self, path, line, field, message):
        self.path, self.line, self.field = path, line, field
        where = f"{path}" + (f", line {line}" if line is not None else "")
        super().__init__(f"imglab XML {where}: {field + ': ' if field else ''}{message}")


class box:
    """dlib's ``image_dataset_metadata::box``: ``rect`` (a ``rectangle``), ``parts`` (dict
    name -> ``(x, y)`` integers), ``label`` ('' = none), the flags ``difficult``, ``truncated``,
    ``occluded``, ``ignore``, the doubles ``pose``, ``detection_score``, ``angle``, ``age`` and
    ``gender`` (``"unknown"``, ``"male"`` or ``"female"``). Equality compares every field, as
    dlib's ``operator==``."""

    __slots__ = ("rect", "parts", "label", "difficult", "truncated", "occluded", "ignore", "pose",
                 "detection_score", "angle", "gender", "age")

    def __init__(self, rect=None, label="", parts=None, difficult=False, truncated=False,
                 occluded=False, ignore=False, pose=0.0, detection_score=0.0, angle=0.0,
                 gender=UNKNOWN, age=0.0):
        self.rect = rectangle() if rect is None else rectangle._coerce(rect)
        self.parts = {} if parts is None else {str(k): (int(v[0]), int(v[1])) for k, v in parts.items()}
        self.label = str(label)
        self.difficult, self.truncated = bool(difficult), bool(truncated)
        self.occluded, self.ignore = bool(occluded), bool(ignore)
        self.pose, self.detection_score = float(pose), float(detection_score)
        self.angle, self.age = float(angle), float(age)
        if gender not in _GENDERS:
            raise ValueError(f"box: gender must be one of {_GENDERS}, got {gender!r}")
        self.gender = gender

    def has_label(self) -> bool:
        return len(self.label) != 0

    def __eq__(self, other):
        return isinstance(other, box) and all(getattr(self, k) == getattr(other, k)
                                              for k in self.__slots__)

    def __repr__(self):
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in self.__slots__[1:]
                        if getattr(self, k) != getattr(_DEFAULT_BOX, k))
        return f"box({self.rect!r}{extra})"


_DEFAULT_BOX = box()


class image:
    """dlib's ``image_dataset_metadata::image``: ``filename`` (as written in the XML, usually
    relative to its folder), ``boxes`` (a list of ``box``), ``width`` and ``height`` (0 when
    the file does not give them)."""

    __slots__ = ("filename", "boxes", "width", "height")

    def __init__(self, filename="", boxes=None, width=0, height=0):
        self.filename = str(filename)
        self.boxes = [] if boxes is None else list(boxes)
        self.width, self.height = int(width), int(height)

    def __eq__(self, other):
        return isinstance(other, image) and all(getattr(self, k) == getattr(other, k)
                                                for k in self.__slots__)

    def __repr__(self):
        size = f", width={self.width}, height={self.height}" if self.width or self.height else ""
        return f"image({self.filename!r}, {len(self.boxes)} boxes{size})"


class dataset:
    """dlib's ``image_dataset_metadata::dataset``: ``images`` (a list of ``image``),
    ``comment`` and ``name``."""

    __slots__ = ("images", "comment", "name")

    def __init__(self, images=None, comment="", name=""):
        self.images = [] if images is None else list(images)
        self.comment, self.name = str(comment), str(name)

    def __eq__(self, other):
        return isinstance(other, dataset) and all(getattr(self, k) == getattr(other, k)
                                                  for k in self.__slots__)

    def __repr__(self):
        return f"dataset(name={self.name!r}, {len(self.images)} images)"


# ---------------------------------------------------------------------------------------------
# writing

def _fmt_double(v):
    """C++'s ``ostream << double`` with the default precision: ``%g`` with 6 digits. Like
    dlib's files, values keep 6 significant digits."""
    return "%.6g" % v


def _esc_text(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# an "&" that starts something an XML reader takes for an entity or a character reference
_ENTITY_LIKE = re.compile(r"&(?=[A-Za-z_:][-\w.:]*;|#[0-9]+;|#x[0-9a-fA-F]+;)")
_BARE_AMP = re.compile(r"&(?![A-Za-z_:][-\w.:]*;|#[0-9]+;|#x[0-9a-fA-F]+;)")


def _esc_attr(s):
    """dlib reads attribute values raw: a bare ``&`` and ``"`` stay as they are (our reader
    takes a bare ``&`` literally); an ``&`` that would read as an entity, and ``< > '`` (which
    dlib cannot read in an attribute at all) become entities."""
    s = _ENTITY_LIKE.sub("&amp;", s)
    return s.replace("<", "&lt;").replace(">", "&gt;").replace("'", "&apos;")


def _box_lines(b):
    r = b.rect
    s = f"    <box top='{r.top()}' left='{r.left()}' width='{r.width()}' height='{r.height()}'"
    # optional attributes only when not at their default, in dlib's order
    for name in ("difficult", "truncated", "occluded", "ignore"):
        if getattr(b, name):
            s += f" {name}='1'"
    if b.angle != 0:
        s += f" angle='{_fmt_double(b.angle)}'"
    if b.age != 0:
        s += f" age='{_fmt_double(b.age)}'"
    if b.gender in (FEMALE, MALE):
        s += f" gender='{b.gender}'"
    if b.pose != 0:
        s += f" pose='{_fmt_double(b.pose)}'"
    if b.detection_score != 0:
        s += f" detection_score='{_fmt_double(b.detection_score)}'"
    if not b.has_label() and not b.parts:
        return [s + "/>"]
    lines = [s + ">"]
    if b.has_label():
        lines.append(f"      <label>{_esc_text(b.label)}</label>")
    for name in sorted(b.parts):   # std::map order
        x, y = b.parts[name]
        lines.append(f"      <part name='{_esc_attr(name)}' x='{int(x)}' y='{int(y)}'/>")
    lines.append("    </box>")
    return lines


def save_image_dataset_metadata(meta, path):
    """Writes ``meta`` (a ``dataset``) to ``path`` in dlib's imglab XML layout, atomically
    (a temporary file renamed over ``path``). Optional box attributes are written only when not
    at their default, bools as ``1``, doubles with 6 significant digits (as dlib's ``<<``),
    parts sorted by name, image width/height only when both are non-zero. UTF-8 encoded."""
    if not isinstance(meta, dataset):
        raise TypeError(f"save_image_dataset_metadata: expected an image_dataset_metadata "
                        f"dataset, got {type(meta).__name__}")
    lines = ["<?xml version='1.0' encoding='ISO-8859-1'?>",
             "<?xml-stylesheet type='text/xsl' href='image_metadata_stylesheet.xsl'?>",
             "<dataset>",
             f"<name>{_esc_text(meta.name)}</name>",
             f"<comment>{_esc_text(meta.comment)}</comment>",
             "<images>"]
    for i, im in enumerate(meta.images):
        if not isinstance(im, image):
            raise TypeError(f"save_image_dataset_metadata: images[{i}] is a "
                            f"{type(im).__name__}, not an image_dataset_metadata image")
        s = f"  <image file='{_esc_attr(im.filename)}'"
        if im.width != 0 and im.height != 0:
            s += f" width='{im.width}' height='{im.height}'"
        lines.append(s + ">")
        for j, b in enumerate(im.boxes):
            if not isinstance(b, box):
                raise TypeError(f"save_image_dataset_metadata: images[{i}].boxes[{j}] is a "
                                f"{type(b).__name__}, not an image_dataset_metadata box")
            lines.extend(_box_lines(b))
        lines.append("  </image>")
    lines.append("</images>")
    text = "\n".join(lines) + "\n</dataset>"   # dlib ends without a newline
    atomic_write(path, text.encode("utf-8"))
    return os.fspath(path)


# ---------------------------------------------------------------------------------------------
# reading

# dlib's string_cast: ``istream >> value`` must consume the whole string (leading whitespace
# is skipped, trailing characters are an error); integers with a "0x" prefix are hex.
_INT = re.compile(r"\s*[+-]?[0-9]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_DOUBLE = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class _Handler:
    """Expat callbacks reproducing dlib's ``doc_handler``: a stack of open tags; boxes are kept
    when closed directly inside an <image>, images when closed directly inside <images>."""

    def __init__(self, path, parser):
        self.path, self.parser = path, parser
        self.meta = dataset()
        self.tags, self.text = [], []
        self.image, self.box = image(), box()

    def error(self, field, message, line=None):
        return ImageDatasetError(self.path, self.parser.CurrentLineNumber if line is None else line,
                                 field, message)

    def _int(self, tag, atts, name):
        s = atts[name]
        if _HEX.fullmatch(s):
            return int(s[2:], 16)
        if not _INT.fullmatch(s):
            raise self.error(f"<{tag}> attribute '{name}'", f"{s!r} is not an integer")
        return int(s)

    def _double(self, tag, atts, name):
        s = atts[name]
        if not _DOUBLE.fullmatch(s):
            raise self.error(f"<{tag}> attribute '{name}'", f"{s!r} is not a number")
        return float(s)

    def _bool(self, tag, atts, name):
        s = atts[name]
        if s in ("1", "0") or s.lower() in ("true", "false"):
            return s == "1" or s.lower() == "true"
        raise self.error(f"<{tag}> attribute '{name}'", f"{s!r} is not a bool (1, 0, true, false)")

    def _required(self, tag, atts, name):
        if name not in atts:
            raise self.error(f"<{tag}>", f"missing required attribute '{name}'")

    def start(self, name, atts):
        self.text.append([])
        if not self.tags:
            if name != "dataset":
                raise self.error("root", f"the root tag must be <dataset>, found <{name}>")
            self.tags.append(name)
            return
        if name == "box":
            b = self.box = box()
            for k in ("top", "left", "width", "height"):
                self._required("box", atts, k)
            top, left = self._int("box", atts, "top"), self._int("box", atts, "left")
            width, height = self._int("box", atts, "width"), self._int("box", atts, "height")
            b.rect = rectangle(left, top, left + width - 1, top + height - 1)
            for k in ("difficult", "truncated", "occluded", "ignore"):
                if k in atts:
                    setattr(b, k, self._bool("box", atts, k))
            for k in ("angle", "age", "pose", "detection_score"):
                if k in atts:
                    setattr(b, k, self._double("box", atts, k))
            if "gender" in atts:
                if atts["gender"] not in _GENDERS:
                    raise self.error("<box> attribute 'gender'", f"{atts['gender']!r} is not one "
                                     f"of 'male', 'female', 'unknown'")
                b.gender = atts["gender"]
        elif name == "part" and self.tags[-1] == "box":
            for k in ("x", "y", "name"):
                self._required("part", atts, k)
            p = (self._int("part", atts, "x"), self._int("part", atts, "y"))
            if atts["name"] in self.box.parts:
                raise self.error("<part> attribute 'name'", f"part {atts['name']!r} is defined "
                                 f"more than once in one box")
            self.box.parts[atts["name"]] = p
        elif name == "image":
            self.image.boxes = []
            self._required("image", atts, "file")
            self.image.filename = atts["file"]
            if "width" in atts:
                self.image.width = self._int("image", atts, "width")
            if "height" in atts:
                self.image.height = self._int("image", atts, "height")
        self.tags.append(name)

    def end(self, name):
        text = "".join(self.text.pop()).strip(" \t\r\n")   # dlib's trim()
        self.tags.pop()
        if not self.tags:
            return
        if len(self.tags) == 1 and name == "name":
            self.meta.name = text
        elif len(self.tags) == 1 and name == "comment":
            self.meta.comment = text
        elif name == "label" and self.tags[-1] == "box":
            self.box.label = text
        elif name == "box" and self.tags[-1] == "image":
            self.image.boxes.append(self.box)
            self.box = box()
        elif name == "image" and self.tags[-1] == "images":
            self.meta.images.append(self.image)
            self.image = image()

    def chars(self, data):
        if self.text:
            self.text[-1].append(data)


def load_image_dataset_metadata(path) -> dataset:
    """Reads an imglab XML file (as written by dlib's imglab or ``save_image_dataset_metadata``)
    into a ``dataset``, with dlib's rules: ``<box top left width height>`` gives
    ``rect = (left, top, left+width-1, top+height-1)``; optional attributes keep their defaults
    when absent; integers must be whole strings (``0x`` = hex), bools ``1``/``0``/``true``/
    ``false``; ``name``, ``comment`` and ``label`` text is trimmed; unknown tags are ignored.
    Raises ``ImageDatasetError`` naming the file, the line and the field for bad XML, a root
    other than ``<dataset>``, a missing required attribute (``file``; ``top``/``left``/
    ``width``/``height``; part ``name``/``x``/``y``), a malformed number or a duplicate part
    name; ``OSError`` when the file cannot be read."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    text = _BARE_AMP.sub("&amp;", text)   # dlib's raw "&" in attributes (and its raw text)
    parser = expat.ParserCreate(encoding="UTF-8")   # overrides the file's declaration
    h = _Handler(path, parser)
    parser.StartElementHandler = h.start
    parser.EndElementHandler = h.end
    parser.CharacterDataHandler = h.chars
    parser.buffer_text = True
    try:
        parser.Parse(text.encode("utf-8"), True)
    except expat.ExpatError as e:
        raise ImageDatasetError(path, e.lineno, "", f"malformed XML: "
                                f"{expat.ErrorString(e.code)} (column {e.offset + 1})") from None
    return h.meta


# ---------------------------------------------------------------------------------------------
# load_image_dataset

class image_dataset_file:
    """dlib's ``image_dataset_file``: an imglab XML path plus loading options, each method
    returning a modified copy: ``boxes_match_label(label)`` (keep only boxes with one of the
    labels given so far; none given = all), ``skip_empty_images()`` (drop images left without a
    non-ignored box), ``boxes_have_parts()`` (keep only boxes with parts) and
    ``shrink_big_images(thresh=150*150)`` (shrink images whose smallest box is bigger, see
    ``shrink_big_image``)."""

    def __init__(self, filename):
        self._filename = os.fspath(filename)
        self._labels = frozenset()
        self._skip_empty_images = False
        self._have_parts = False
        self._box_area_thresh = math.inf

    def _copy(self, **changes):
        c = image_dataset_file(self._filename)
        c.__dict__.update(self.__dict__)
        c.__dict__.update(changes)
        return c

    def boxes_match_label(self, label):
        return self._copy(_labels=self._labels | {str(label)})

    def skip_empty_images(self):
        return self._copy(_skip_empty_images=True)

    def boxes_have_parts(self):
        return self._copy(_have_parts=True)

    def shrink_big_images(self, new_box_area_thresh=150 * 150):
        return self._copy(_box_area_thresh=float(new_box_area_thresh))

    def should_load_box(self, b) -> bool:
        if self._have_parts and not b.parts:
            return False
        return not self._labels or b.label in self._labels

    def get_filename(self):
        return self._filename

    def should_skip_empty_images(self) -> bool:
        return self._skip_empty_images

    def should_boxes_have_parts(self) -> bool:
        return self._have_parts

    def box_area_thresh(self) -> float:
        return self._box_area_thresh

    def get_selected_box_labels(self):
        return set(self._labels)

    def __repr__(self):
        return f"image_dataset_file({self._filename!r})"


def _as_source(source):
    return source if isinstance(source, image_dataset_file) else image_dataset_file(source)


def image_dataset_boxes(meta, source=None):
    """The image-free part of dlib's ``load_image_dataset`` (``mmod_rect`` overload): for each
    image of ``meta`` that is kept, ``(image, rects)`` with ``rects`` the boxes passing
    ``source``'s filters (an ``image_dataset_file``; None = no options), in file order, ignored
    boxes as ``ignored_mmod_rect``, each with its box's label. An image is dropped only under
    ``skip_empty_images()`` when no non-ignored box remains."""
    source = image_dataset_file("") if source is None else _as_source(source)
    out = []
    for im in meta.images:
        rects = []
        for b in im.boxes:
            if source.should_load_box(b):
                r = ignored_mmod_rect(b.rect) if b.ignore else mmod_rect(b.rect)
                r.label = b.label
                rects.append(r)
        if not source.should_skip_empty_images() or any(not r.ignore for r in rects):
            out.append((im, rects))
    return out


def shrink_big_image(img, rects, box_area_thresh):
    """dlib's ``shrink_big_images`` step of ``load_image_dataset`` for one image: while the
    smallest non-ignored box would still be above ``box_area_thresh`` after a 2:1 step, apply
    ``pyramid_down(2)`` to the image; then the same with 3:2 steps (``pyramid_down(3)``). Every
    step maps each box (ignored ones too) with the pyramid's ``rect_down``, rounded to a
    ``rectangle`` as dlib's assignment does; the running "smallest area" is scaled by
    ``1/4`` or ``4/9`` per step, not recomputed from the rounded boxes (as dlib).

    Returns ``(img, rects)``: the (possibly) shrunk image and new ``mmod_rect``s (copies).
    Without a non-ignored box nothing is shrunk (dlib loops forever there)."""
    areas = [r.rect.area() for r in rects if not r.ignore]
    if not areas:
        return img, list(rects)
    smallest = float(min(areas))
    rects = [mmod_rect(r.rect, r.detection_confidence, r.ignore, r.label) for r in rects]
    pyr = pyramid_down(2)
    while smallest / 2 / 2 > box_area_thresh:
        img = pyr(img)
        smallest *= (1.0 / 2.0) * (1.0 / 2.0)
        for r in rects:
            r.rect = rectangle._coerce(pyr.rect_down(r.rect))
    pyr = pyramid_down(3)
    while smallest * (2.0 / 3.0) * (2.0 / 3.0) > box_area_thresh:
        img = pyr(img)
        smallest *= (2.0 / 3.0) * (2.0 / 3.0)
        for r in rects:
            r.rect = rectangle._coerce(pyr.rect_down(r.rect))
    return img, rects


def default_loader(path):
    """The loader ``load_image_dataset`` uses when none is given: ``dnnpy.image.load_image``
    as an RGB image (dlib's ``matrix<rgb_pixel>``), any format Pillow reads."""
    return load_image(path)


def load_image_dataset(source, loader=None):
    """dlib's ``load_image_dataset(images, boxes, source)`` for ``mmod_rect`` boxes: returns
    ``(images, boxes)``, per kept image the loaded array and its list of ``mmod_rect``
    (see ``image_dataset_boxes`` for the rules). ``source``: the XML path or an
    ``image_dataset_file`` with options. Image files are resolved relative to the XML's folder
    and read with ``loader(path) -> numpy array`` (default ``default_loader``:
    ``dnnpy.image.load_image``, RGB). A missing
    or unreadable image raises ``ImageDatasetError`` naming the image file and the XML.
    Under ``shrink_big_images(thresh)`` each image with boxes goes through
    ``shrink_big_image`` (dlib's pyramid_down<2> then pyramid_down<3> steps, boxes mapped)."""
    source = _as_source(source)
    xml_path = source.get_filename()
    meta = load_image_dataset_metadata(xml_path)
    folder = os.path.dirname(os.path.abspath(xml_path))
    loader = default_loader if loader is None else loader
    images, boxes = [], []
    for im, rects in image_dataset_boxes(meta, source):
        path = os.path.join(folder, im.filename)   # an absolute filename stays as it is
        if not os.path.isfile(path):
            raise ImageDatasetError(xml_path, None, f"<image file='{im.filename}'>",
                                    f"the image file {path} does not exist")
        try:
            img = loader(path)
        except Exception as e:
            raise ImageDatasetError(xml_path, None, f"<image file='{im.filename}'>",
                                    f"cannot read the image {path}: {e}") from e
        img = np.asarray(img)
        if rects and source.box_area_thresh() < math.inf:
            img, rects = shrink_big_image(img, rects, source.box_area_thresh())
        images.append(img)
        boxes.append(rects)
    return images, boxes
