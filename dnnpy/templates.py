"""Bracket templates: ``con[16,5,5,1,1, SUBNET]`` is dlib's ``con<16,5,5,1,1,SUBNET>``.

A template's ``[...]`` takes its constructor arguments then the SUBNET (another net type
or an input layer class) and returns a ``NetType``: cached (the same expression gives the
same object), hashable, printable as its bracket expression, and callable to build a
fresh net. ``dnnpy.parsing.net_type_from_string`` parses that expression back without
``eval``, from the registry of template names kept here.

Templates defined here: ``tag1..tag10``, ``skip1..skip10``, ``repeat``; layer families
define theirs with ``layer_template`` / ``loss_template`` and register them by name.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np

from .core import add_layer, add_loss_layer, add_skip_layer, add_tag_layer, input_node, repeat_layer
from .inputs.base import input_layer

__all__ = ["NetType", "layer_template", "loss_template", "SUBNET", "repeat", "tag_templates",
           "skip_templates", "tag_template", "skip_template", "register_input", "registered",
           "is_input_type"]

_REGISTRY = {}   # template name -> template, for the parser
_INPUTS = {}     # input type expression -> input layer class, for the parser
_INPUT_TEMPLATES = {}  # name -> bracket input template (an object with ``is_input_template``,
                       # ``name`` and ``[args]`` returning an input layer class), for the parser


def _register(template):
    _REGISTRY[template.name] = template
    return template


def register_input(cls):
    _INPUTS[cls.type_expr()] = cls
    return cls


def registered():
    """``(templates, inputs, input_templates)``: the name -> object tables the parser reads."""
    return _REGISTRY, _INPUTS, _INPUT_TEMPLATES


def is_input_type(obj):
    return isinstance(obj, type) and issubclass(obj, input_layer)


def _type_expr(obj):
    return obj.type_expr() if is_input_type(obj) else repr(obj)


def _fmt_arg(a):
    if isinstance(a, NetType) or is_input_type(a):
        return _type_expr(a)
    if isinstance(a, _template):  # a tag template passed as an argument (add_prev[tag1, ...])
        return a.name
    return repr(a)


class NetType:
    """A network type: template + constructor arguments + SUBNET type. Call it to build."""

    __slots__ = ("template", "args", "subnet", "_hash")

    def __init__(self, template, args, subnet):
        self.template, self.args, self.subnet = template, args, subnet
        self._hash = hash((id(template), args, subnet))

    def __call__(self, *args):
        """A fresh net of this type. As dlib's ``net_type net(args...)``, arguments go to the
        top layer: ``loss_mmod[...](options)`` builds ``loss_mmod_(options)``; in general the
        top details are ``cls(*template_args, *args)``, or a copy of ``args[0]`` when that is
        already an instance of the top layer's details class."""
        if args and _looks_like_a_batch(args[0]):
            raise TypeError(f"{self!r} is a net TYPE: calling it builds a net (its arguments go to "
                            f"the top layer's constructor), so it cannot run a batch: use "
                            f"net = net_type(); net(batch)")
        net = self.template._build(self.args, self.subnet, args)
        net.template = self.template
        net.net_type = self
        return net

    def is_loss(self):
        return isinstance(self.template, loss_template)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        parts = [_fmt_arg(a) for a in self.args] + [_type_expr(self.subnet)]
        return f"{self.template.name}[{', '.join(parts)}]"

    def __reduce__(self):
        # pickling a type (not a net) goes through its expression; the parser sits above the
        # whole catalogue (dnnpy.parsing), so it is looked up only when pickling
        from .parsing import net_type_from_string
        return (net_type_from_string, (repr(self),))

    def __copy__(self):  # cached and immutable: one object per expression
        return self

    def __deepcopy__(self, memo):
        return self


def _looks_like_a_batch(arg):
    """An array of 2+ dimensions, or a list/tuple holding arrays: what a user who forgot the
    ``()`` of ``net_type()(batch)`` passes (no layer constructor takes one)."""
    if isinstance(arg, np.ndarray):
        return arg.ndim >= 2
    return (isinstance(arg, (list, tuple)) and len(arg) > 0
            and all(isinstance(a, (np.ndarray, list, tuple)) for a in arg[:3]))


_CACHE = {}


def _build_subnet(subnet_type):
    """A fresh node for a SUBNET type: a net, or the input node holding a new input layer."""
    if is_input_type(subnet_type):
        return input_node(subnet_type())
    return subnet_type()


class _template:
    """Base: ``T[args..., SUBNET]`` -> cached NetType after validating the arguments."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, items):
        items = items if isinstance(items, tuple) else (items,)
        if not items:
            raise TypeError(f"{self.name}[...]: the last argument must be the SUBNET")
        *args, subnet = items
        if not (isinstance(subnet, NetType) or is_input_type(subnet)):
            raise TypeError(f"{self.name}[...]: the last argument must be a net type or an input "
                            f"layer (the SUBNET), got {subnet!r}")
        if isinstance(subnet, NetType) and subnet.is_loss():
            raise TypeError(f"{self.name}[...]: a loss layer must be the top of a net, "
                            f"it cannot be the SUBNET of {self.name}")
        args = tuple(self._normalize(args))
        key = (id(self), args, subnet)
        t = _CACHE.get(key)
        if t is None:
            self._validate(args)
            t = _CACHE[key] = NetType(self, args, subnet)
        return t

    def _normalize(self, args):
        for a in args:
            if isinstance(a, (bool, np.bool_)):
                yield bool(a)
            elif isinstance(a, numbers.Integral):
                yield int(a)
            elif isinstance(a, numbers.Real):
                yield float(a)
            else:
                yield a

    def _validate(self, args):
        pass

    def __repr__(self):
        return self.name

    # templates are singletons compared by identity (layer(sub, tag1) looks tags up with
    # ``is``), so copies of a layer holding one must hold the same object
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _no_extra(name, extra):
    if extra:
        raise TypeError(f"{name}[...]: a net whose top is {name} takes no constructor arguments, "
                        f"got {len(extra)}")


class layer_template(_template):
    """``name[args..., SUBNET]`` -> ``add_layer(details_cls(*args, **fixed), SUBNET)``."""

    def __init__(self, name, details_cls, **fixed):
        super().__init__(name)
        self.details_cls = details_cls
        self.fixed = fixed
        _register(self)

    def make_details(self, args, extra=()):
        if len(extra) == 1 and isinstance(extra[0], self.details_cls):
            return copy.deepcopy(extra[0])
        try:
            return self.details_cls(*args, *extra, **self.fixed)
        except TypeError as e:
            raise TypeError(f"{self.name}[...]: {e}") from None
        except ValueError as e:
            raise ValueError(f"{self.name}[...]: {e}") from None

    def _validate(self, args):
        self.make_details(args)

    def _build(self, args, subnet_type, extra=()):
        return add_layer(self.make_details(args, extra), _build_subnet(subnet_type))


class loss_template(layer_template):
    """``name[args..., SUBNET]`` -> ``add_loss_layer(loss_cls(*args), SUBNET)``."""

    def _build(self, args, subnet_type, extra=()):
        return add_loss_layer(self.make_details(args, extra), _build_subnet(subnet_type))


class _tag_template(_template):
    def __init__(self, name, node_cls, tag_id):
        super().__init__(name)
        self.node_cls, self.id = node_cls, tag_id
        _register(self)

    def _validate(self, args):
        if args:
            raise TypeError(f"{self.name}[SUBNET] takes only the SUBNET, got {len(args)} more arguments")

    def _build(self, args, subnet_type, extra=()):
        _no_extra(self.name, extra)
        return self.node_cls(self.id, _build_subnet(subnet_type))


def _make_tags():
    tags = [_tag_template(f"tag{i}", add_tag_layer, i) for i in range(1, 11)]
    skips = [_tag_template(f"skip{i}", add_skip_layer, i) for i in range(1, 11)]
    return tags, skips


tag_templates, skip_templates = _make_tags()


def _named_tag(kind, node_cls, name, tag_id):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{kind}_template: the name must be a Python identifier, got {name!r}")
    if isinstance(tag_id, bool) or not isinstance(tag_id, numbers.Integral) or tag_id < 0:
        raise ValueError(f"{kind}_template({name!r}, ...): the id must be an integer >= 0, got {tag_id!r}")
    old = _REGISTRY.get(name)
    if old is not None:
        if isinstance(old, _tag_template) and old.node_cls is node_cls and old.id == tag_id:
            return old   # the same declaration again (a module imported twice)
        raise ValueError(f"{kind}_template({name!r}, {tag_id}): the name {name!r} is already "
                         f"taken by {old!r}" + (f" (id {old.id})" if hasattr(old, "id") else ""))
    return _tag_template(name, node_cls, int(tag_id))


def tag_template(name, tag_id):
    """A tag with any id, dlib's ``template <typename SUBNET> using NAME =
    add_tag_layer<ID, SUBNET>;`` (e.g. ``utag1 = tag_template("utag1", 2101)``).

    The result is used like ``tag1``: ``utag1[SUBNET]``, ``layer(net, utag1)``, and as the tag
    argument of ``add_prev``, ``concat_``, ``resize_prev_to_tagged`` ... It prints as dlib does
    (``tag2101``) and is registered under ``name`` for ``net_type_from_string``. Declaring the
    same name with the same id again returns the same template; a name already used for
    anything else raises ValueError."""
    return _named_tag("tag", add_tag_layer, name, tag_id)


def skip_template(name, tag_id):
    """A skip to the nearest tag with id ``tag_id`` below it, dlib's ``add_skip_layer<ID,
    SUBNET>``; see ``tag_template``."""
    return _named_tag("skip", add_skip_layer, name, tag_id)


def _make_subnet_placeholder():
    class repeat_input_layer(input_layer):
        """The input of each copy inside ``repeat``: fed the output of the layer below."""

        @classmethod
        def type_expr(cls):
            return "SUBNET"

        def to_tensor(self, batch, data):
            raise ValueError("repeat_input_layer: a repeated block has no input of its own")

        def __repr__(self):
            return "repeat_input_layer"

    return repeat_input_layer


SUBNET = _make_subnet_placeholder()
_INPUTS["SUBNET"] = SUBNET


class _repeat_template(_template):
    """``repeat[N, block, SUBNET]``: ``block`` is a function of a SUBNET type (a dlib
    ``using`` alias, e.g. ``lambda s: relu[fc[10, s]]``) or a net type over ``SUBNET``."""

    def __getitem__(self, items):
        if not isinstance(items, tuple) or len(items) != 3:
            raise TypeError("repeat[N, block, SUBNET] takes exactly three arguments")
        n, block, subnet = items
        if callable(block) and not isinstance(block, NetType):
            block = block(SUBNET)
        if not isinstance(block, NetType) or block.is_loss():
            raise TypeError(f"repeat[...]: block must be a function of SUBNET returning a net type, "
                            f"or a net type over SUBNET, got {block!r}")
        return super().__getitem__((n, block, subnet))

    def _validate(self, args):
        n, _ = args
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"repeat[...]: the number of repetitions must be an integer >= 1, got {n!r}")

    def _build(self, args, subnet_type, extra=()):
        _no_extra(self.name, extra)
        n, block = args
        return repeat_layer([block() for _ in range(n)], _build_subnet(subnet_type))


repeat = _register(_repeat_template("repeat"))
