"""imglab XML (dnnpy.data.imglab) against dlib's image_dataset_metadata.cpp and
load_image_dataset.h: the exact layout dlib writes, dlib-bin reading our files and we reading
its files, errors naming file/line/field for bad XML, and load_image_dataset's box rules."""

import os

import numpy as np
import pytest

from dnnpy.data import (ImageDatasetError, image_dataset_file, image_dataset_metadata,
                        load_image_dataset, load_image_dataset_metadata,
                        save_image_dataset_metadata)
from dnnpy.data.imglab import box, dataset, image, image_dataset_boxes
from dnnpy.geometry import mmod_rect, rectangle
from dnnpy.image.png import write_png


def _sample():
    b1 = box(rectangle(10, 20, 59, 89), label="car", parts={"nose": (30, 40), "eye": (5, -2)},
             difficult=True, occluded=True, angle=12.5, age=33, gender="female", pose=-1.25,
             detection_score=0.875)
    b2 = box(rectangle(0, 0, 9, 9), ignore=True)
    b3 = box(rectangle(5, 6, 14, 26), truncated=True, gender="male")
    return dataset([image("a.png", [b1, b2], width=64, height=48), image("sub/b.png", [b3]),
                    image("c.png")], comment="made by a test", name="dnnpy sample")


EXPECTED = """<?xml version='1.0' encoding='ISO-8859-1'?>
<?xml-stylesheet type='text/xsl' href='image_metadata_stylesheet.xsl'?>
<dataset>
<name>dnnpy sample</name>
<comment>made by a test</comment>
<images>
  <image file='a.png' width='64' height='48'>
    <box top='20' left='10' width='50' height='70' difficult='1' occluded='1' angle='12.5' \
age='33' gender='female' pose='-1.25' detection_score='0.875'>
      <label>car</label>
      <part name='eye' x='5' y='-2'/>
      <part name='nose' x='30' y='40'/>
    </box>
    <box top='0' left='0' width='10' height='10' ignore='1'/>
  </image>
  <image file='sub/b.png'>
    <box top='6' left='5' width='10' height='21' truncated='1' gender='male'/>
  </image>
  <image file='c.png'>
  </image>
</images>
</dataset>"""


def test_layout_and_round_trip(tmp_path):
    p = tmp_path / "t.xml"
    save_image_dataset_metadata(_sample(), p)
    assert p.read_text() == EXPECTED
    back = load_image_dataset_metadata(p)
    assert back == _sample()
    assert back.images[1].width == 0 and back.images[0].boxes[0].rect == rectangle(10, 20, 59, 89)
    assert image_dataset_metadata.box is box
    assert not [f for f in os.listdir(tmp_path) if f != "t.xml"]   # no temp file left


def test_special_and_unicode_strings_round_trip(tmp_path):
    names = ["d'ir/é & <x>.png", 'a&amp;b "q".png', "&#38;&x;"]
    d = dataset([image(f, [box(rectangle(1, 2, 3, 4), label="a<b & 'c'  ü")]) for f in names],
                name="  näme  ", comment="x")
    p = tmp_path / "u.xml"
    save_image_dataset_metadata(d, p)
    back = load_image_dataset_metadata(p)
    assert [im.filename for im in back.images] == names
    assert back.images[0].boxes[0].label == "a<b & 'c'  ü"
    assert back.name == "näme"    # dlib trims name, comment and label text


def test_lenient_reading(tmp_path):
    """What dlib's parser accepts: hex and signed integers, true/false, unknown tags, a BOM;
    boxes outside <image> and images outside <images> are dropped, as dlib does."""
    p = tmp_path / "l.xml"
    p.write_bytes(("\ufeff<dataset><name> n </name><whatever a='1'/><images>"
                   "<image file='x.png' width='0x10' height='+8'>"
                   "<box top='-3' left=' 4' width='5' height='6' ignore='TRUE' difficult='false'"
                   " angle='1e1' gender='unknown'/></image></images>"
                   "<image file='stray.png'/></dataset>").encode("utf-8"))
    d = load_image_dataset_metadata(p)
    assert d.name == "n" and len(d.images) == 1
    im = d.images[0]
    assert (im.width, im.height) == (16, 8)
    b = im.boxes[0]
    assert b.rect == rectangle(4, -3, 8, 2) and b.ignore and not b.difficult and b.angle == 10


@pytest.mark.parametrize("body, line, field", [
    ("<data/>", 2, "root"),
    ("<dataset>\n<images>\n<image width='3'/>", 4, "<image>"),
    ("<dataset><images>\n<image file='a'>\n<box top='1' left='2' width='3'/>", 4, "<box>"),
    ("<dataset><images><image file='a'>\n<box top='1.5' left='2' width='3' height='4'/>", 3,
     "<box> attribute 'top'"),
    ("<dataset><images><image file='a'>\n\n<box top='1' left='2' width='3' height='4' "
     "ignore='yes'/>", 4, "<box> attribute 'ignore'"),
    ("<dataset><images><image file='a'><box top='1' left='2' width='3' height='4' "
     "gender='f'/>", 2, "<box> attribute 'gender'"),
    ("<dataset><images><image file='a'><box top='1' left='2' width='3' height='4'>\n"
     "<part name='p' x='1' y='2'/>\n<part name='p' x='1' y='2'/>", 4, "<part> attribute 'name'"),
    ("<dataset><images><image file='a'><box top='1' left='2' width='3' height='4'>\n"
     "<part name='p' x='1'/>", 3, "<part>"),
    ("<dataset>\n<images>\n<image file='a'>\n</images>", 5, ""),
])
def test_bad_xml_names_file_line_field(tmp_path, body, line, field):
    p = tmp_path / "bad.xml"
    p.write_text("<?xml version='1.0'?>\n" + body + "</image></images></dataset>")
    with pytest.raises(ImageDatasetError) as e:
        load_image_dataset_metadata(p)
    assert e.value.line == line and e.value.field == field and e.value.path == str(p)
    assert str(p) in str(e.value) and f"line {line}" in str(e.value)


def test_dlib_reads_ours_and_we_read_dlibs(tmp_path):
    dlib = pytest.importorskip("dlib")
    m = dlib.image_dataset_metadata
    ours = _sample()
    # what both can hold: raw "&" and '"' in attributes (dlib reads attributes raw), "&" in text
    ours.images[1].filename = 'Tom & Jerry "2".png'
    ours.images[0].boxes[0].label = "cars & vans"
    for im in ours.images:   # dlib-bin's image has no width/height fields
        im.width = im.height = 0
    p = tmp_path / "ours.xml"
    save_image_dataset_metadata(ours, p)
    d = m.load_image_dataset_metadata(str(p))
    assert (d.name, d.comment, len(d.images)) == (ours.name, ours.comment, 3)
    genders = {m.box.UNKNOWN: "unknown", m.box.MALE: "male", m.box.FEMALE: "female"}
    for im, oim in zip(d.images, ours.images):
        assert im.filename == oim.filename and len(im.boxes) == len(oim.boxes)
        for b, ob in zip(im.boxes, oim.boxes):
            r = b.rect
            assert (r.left(), r.top(), r.right(), r.bottom()) == tuple(ob.rect)
            assert {k: (b.parts[k].x, b.parts[k].y) for k in b.parts} == ob.parts
            assert genders[b.gender] == ob.gender
            for k in ("label", "difficult", "truncated", "occluded", "ignore", "pose",
                      "detection_score", "angle", "age"):
                assert getattr(b, k) == getattr(ob, k), k
    # dlib writes the same bytes, except that it leaves "&" in text raw (which its own reader
    # then rejects; ours takes a bare "&" literally), and we read its file back equal
    q = tmp_path / "dlib.xml"
    m.save_image_dataset_metadata(d, str(q))
    assert q.read_bytes() == p.read_bytes().replace(b"cars &amp; vans", b"cars & vans")
    assert load_image_dataset_metadata(q) == ours


def _scene_dataset(tmp_path):
    rng = np.random.default_rng(0)
    write_png(tmp_path / "a.png", rng.integers(0, 256, (20, 30, 3), dtype=np.uint8))
    os.mkdir(tmp_path / "sub")
    write_png(tmp_path / "sub" / "b.png", rng.integers(0, 256, (10, 12), dtype=np.uint8))
    d = dataset([
        image("a.png", [box(rectangle(1, 1, 10, 10), label="car"),
                        box(rectangle(0, 0, 29, 19), ignore=True),
                        box(rectangle(2, 3, 8, 9), label="face", parts={"n": (4, 5)})]),
        image("sub/b.png", [box(rectangle(1, 1, 5, 5), label="car", ignore=True)]),
        image("sub/b.png", [])])
    save_image_dataset_metadata(d, tmp_path / "train.xml")
    return tmp_path / "train.xml"


def test_load_image_dataset_rules(tmp_path):
    xml = _scene_dataset(tmp_path)
    images, boxes = load_image_dataset(str(xml))
    assert [im.shape for im in images] == [(20, 30, 3), (10, 12, 3), (10, 12, 3)]  # RGB, as rgb_pixel
    assert boxes[0] == [mmod_rect(rectangle(1, 1, 10, 10), label="car"),
                        mmod_rect(rectangle(0, 0, 29, 19), ignore=True),
                        mmod_rect(rectangle(2, 3, 8, 9), label="face")]
    assert boxes[1] == [mmod_rect(rectangle(1, 1, 5, 5), ignore=True, label="car")]
    assert boxes[2] == []
    # skip_empty_images drops images with only ignored boxes (or none)
    images, boxes = load_image_dataset(image_dataset_file(xml).skip_empty_images())
    assert len(images) == 1
    # label filter: ignored boxes of other labels go too; parts filter
    d = load_image_dataset_metadata(xml)
    kept = image_dataset_boxes(d, image_dataset_file(xml).boxes_match_label("car"))
    assert [len(r) for _, r in kept] == [1, 1, 0]
    kept = image_dataset_boxes(d, image_dataset_file(xml).boxes_have_parts().skip_empty_images())
    assert [(im.filename, [r.label for r in rs]) for im, rs in kept] == [("a.png", ["face"])]


def test_load_image_dataset_errors(tmp_path):
    xml = _scene_dataset(tmp_path)
    os.remove(tmp_path / "sub" / "b.png")
    with pytest.raises(ImageDatasetError, match=r"sub/b\.png.*does not exist"):
        load_image_dataset(xml)
    (tmp_path / "sub" / "b.png").write_bytes(b"GIF89a not a png")
    with pytest.raises(ImageDatasetError, match=r"cannot read the image .*b\.png"):
        load_image_dataset(xml)
    seen = []
    images, _ = load_image_dataset(xml, loader=lambda p: seen.append(p) or np.zeros((2, 2)))
    assert seen[1] == os.path.join(str(tmp_path), "sub/b.png") and len(images) == 3
