"""Bracket templates: ``con[16,5,5,1,1, SUBNET]`` is dlib's ``con<16,5,5,1,1,SUBNET>``.

A template's ``[...]`` takes its constructor arguments then the SUBNET (another net type
or an input layer class) and returns a ``NetType``: cached (the same expression gives the
same object), hashable, printable as its bracket expression, and callable to build a
fresh net. ``dnnpy.parsing.net_type_from_string`` parses that expression back without
``eval``, from the registry of template names kept here.

Templates defined here: ``tag1..tag10``, ``skip1..skip10``, ``repeat``; layer families
define theirs with ``layer_template`` / ``loss_template`` and register them by name.

dlib's other spellings of a type (``add_layer[con_(...), SUBNET]``, ``alias``) are in
``spellings.py``, above this module.

Building a net (``net_type(args...)``) hands each constructor argument down the stack to
the first layer that can be built from it, as dlib's forwarding constructors do
(``net_type(num_fc_outputs(15))``, ``net_type2(prelu_(0.2), repeat_group(...))``); one net
as the argument is dlib's converting construction ``anet_type net2(net)``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers

import numpy as np

from .core import (add_layer, add_loss_layer, add_skip_layer, add_tag_layer, input_node, net_node,
                   repeat_layer, subnet_wrapper)
from .constructor_arguments import (converted, describe, input_takes, looks_like_a_batch,
                                    pending_arguments, repeat_group)
from .inputs.base import input_layer

__all__ = ["NetType", "layer_template", "loss_template", "SUBNET", "repeat", "repeat_group",
           "tag_templates", "skip_templates", "tag_template", "skip_template", "is_tag_template", "check_tag",
           "tag_with_id", "register_input", "registered", "is_input_type", "actual_net_type",
           "refresh_net_types", "prototype_type"]

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
        """A fresh net of this type: dlib's ``net_type net(args...)``.

        With no argument every layer is built from its template arguments. Each argument goes
        to the first layer, from the top down and below the layer that took the previous
        argument, that can be built from it (dlib's forwarding constructors):

        * a layer object of that layer's class, copied: ``net_type2(prelu_(0.2), prelu_(0.25))``
          configures the first two prelu layers. Its template arguments must be the declared
          ones, except those a setting may change (``fc_(15)`` goes to ``fc[10, ...]``);
        * a setting the layer's class takes (``num_fc_outputs(15)``, ``num_con_outputs(8)``,
          a loss's options: ``loss_mmod_``'s ``mmod_options``), or an input layer object;
        * a plain value the layer's class is built from in dlib (``constructor_settings``):
          a number for ``prelu_`` and ``loss_epsilon_insensitive_``, a dict for
          ``loss_multimulticlass_log_``. A value that two layers could take goes to the first
          from the top, as in dlib (``net_type(0.01)`` on a net with a prelu under
          ``loss_epsilon_insensitive`` sets the loss's eps);
        * ``repeat_group(a, b, ...)``: every block of the next ``repeat`` is built from
          ``a, b, ...``, in the same way.

        An argument that no layer takes raises TypeError naming it. One net as the only
        argument is dlib's converting construction ``anet_type net2(net)``: a new net of this
        type holding copies of that net's layers, ``bn_`` folded into ``affine_`` and dropout
        into ``multiply`` (``copy_net_as``); a net without a loss (``layer(net, 5)``) given to
        a loss type gets this type's loss on top (``copy_subnet``).

        When an argument changes a template argument (``fc_(15)`` into ``fc[10, ...]``),
        ``net.net_type`` reports the net as built (``fc[15, ...]``).
        """
        if args and looks_like_a_batch(args[0]):
            raise TypeError(f"{self!r} is a net TYPE: calling it builds a net (its arguments go to "
                            f"its layers' constructors), so it cannot run a batch: use "
                            f"net = net_type(); net(batch)")
        if len(args) == 1 and isinstance(args[0], (net_node, subnet_wrapper)):
            return converted(self, args[0])
        for i, a in enumerate(args):
            if isinstance(a, (net_node, subnet_wrapper)):
                raise TypeError(f"{self!r}(...): argument {i} is a net; the converting construction "
                                f"net_type(net) takes that net as its only argument")
        pending = pending_arguments(args)
        net = self._make(pending)
        if pending.left:
            raise pending.not_taken(self, net)
        if args:
            refresh_net_types(net)
        return net

    def _make(self, pending):
        net = self.template._build(self.args, self.subnet, pending)
        net.template = self.template
        net.net_type = self
        return net

    def accepts(self, value) -> bool:
        """Whether some layer of this type can be built from ``value`` (see ``__call__``)."""
        if self.template._takes(self.args, value):
            return True
        sub = self.subnet
        return sub.accepts(value) if isinstance(sub, NetType) else input_takes(sub, value)

    @property
    def num_layers(self) -> int:
        """Layers in a net of this type (dlib's static ``net_type::num_layers``)."""
        return _counts(self)[0]

    @property
    def num_computational_layers(self) -> int:
        """``add_layer`` nodes in a net of this type (dlib's ``num_computational_layers``)."""
        return _counts(self)[1]

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


@functools.lru_cache(maxsize=256)
def _counts(net_type):
    net = net_type()
    return int(net.num_layers), int(net.num_computational_layers)


_CACHE = {}


def _build_subnet(subnet_type, pending=None):
    """A fresh node for a SUBNET type: a net, or the input node holding a new input layer
    (or one built from the next constructor argument, when it is an input layer object)."""
    if is_input_type(subnet_type):
        if pending is not None and input_takes(subnet_type, pending.peek()):
            i, value = pending.take()
            layer = copy.deepcopy(value) if type(value) is subnet_type else subnet_type(value)
            node = input_node(layer)
            pending.placed[i] = layer
            return node
        return input_node(subnet_type())
    return subnet_type._make(pending if pending is not None else pending_arguments(()))


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

    def _takes(self, args, value) -> bool:
        """Whether the node this template builds from ``args`` takes the constructor
        argument ``value`` (tags, skips: never)."""
        return False

    def _build(self, args, subnet_type, pending):
        raise NotImplementedError

    def __repr__(self):
        return self.name

    # templates are singletons compared by identity (layer(sub, tag1) looks tags up with
    # ``is``), so copies of a layer holding one must hold the same object
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# -- a layer's template arguments, read back from a layer object ------------------------

@functools.lru_cache(maxsize=None)
def _parameters(cls):
    """The positional constructor parameters of a details class (names), or () when its
    signature cannot be read."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _declared(details):
    """The template arguments ``details`` holds, ``{constructor parameter: value}``, from its
    class's declaration ``template_args(self)``; {} for a class that declares none (a
    class whose constructor takes no arguments needs none)."""
    declared = getattr(details, "template_args", None)
    return dict(declared()) if callable(declared) else {}


def _shortest(value):
    """A float a layer holds as float32 (``leaky_relu_(0.2).alpha`` is 0.20000000298) as the
    shortest decimal of that float32 (0.2), as a net type prints it; anything else as is."""
    if type(value) is float and np.isfinite(value) and float(np.float32(value)) == value:
        return float(str(np.float32(value)))     # numpy prints a float32's shortest decimal
    return value


def _same(a, b):
    """Template arguments equal; floats as the float32 a layer and dlib's files hold them
    (``leaky_relu[0.1, ...]`` holds 0.10000000149)."""
    if a is b:
        return True
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        if isinstance(a, bool) or isinstance(b, bool):
            return False
        return a == b or (isinstance(a, float) or isinstance(b, float)) and np.float32(a) == np.float32(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return False


class layer_template(_template):
    """``name[args..., SUBNET]`` -> ``add_layer(details_cls(*args, **fixed), SUBNET)``.

    A details class may declare ``constructor_settings = {setting class: parameter name}``:
    a net constructor's argument of that class is passed as that parameter (dlib's
    ``fc_(num_fc_outputs)``), so ``net_type(num_fc_outputs(15))`` sets the first fc's outputs.
    A details class whose constructor takes arguments declares the values it holds for them
    with ``template_args(self) -> {parameter name: value}`` (``con_``: num_filters, nr, ...;
    dlib's template arguments), which is how ``add_layer[obj, SUBNET]`` finds the template and
    ``net.net_type`` follows a layer changed after construction. A class without the
    declaration still works under ``add_layer[obj, SUBNET]``: its type holds copies of the
    object (``prototype_type``).
    The class of a constructor setting may be a plain type, following the details' dlib constructor:
    ``numbers.Real`` for ``loss_epsilon_insensitive_(double)`` or ``prelu_(float)``,
    ``Mapping`` for ``loss_multimulticlass_log_(std::map)`` (a bool is never a number here).
    """

    def __init__(self, name, details_cls, **fixed):
        super().__init__(name)
        self.details_cls = details_cls
        self.fixed = fixed
        _register(self)

    def make_details(self, args):
        names = self.parameter_names()
        try:
            if self.fixed and len(args) <= len(names):   # by name: a fixed parameter may come first
                return self.details_cls(**dict(zip(names, args)), **self.fixed)
            return self.details_cls(*args, **self.fixed)
        except TypeError as e:
            raise TypeError(f"{self.name}[...]: {e}") from None
        except ValueError as e:
            raise ValueError(f"{self.name}[...]: {e}") from None

    def _validate(self, args):
        self.make_details(args)

    def parameter_names(self, args=None):
        """The constructor parameters the template's arguments fill, in order (those the
        template fixes left out); all of them, or the first ``len(args)``."""
        names = [n for n in _parameters(self.details_cls) if n not in self.fixed] \
            if isinstance(self.details_cls, type) else []
        return names if args is None else names[:len(args)]

    def _settings(self):
        return getattr(self.details_cls, "constructor_settings", {}) if isinstance(self.details_cls, type) else {}

    def _takes(self, args, value):
        if type(value) is self.details_cls:
            settable = set(self._settings().values())
            declared = list(zip(self.parameter_names(args), args)) + list(self.fixed.items())
            held = _declared(value)
            return all(name in settable or v is None or name not in held or _same(held[name], v)
                       for name, v in declared)
        return self._setting_for(value) is not None

    def _setting_for(self, value):
        """The parameter a constructor argument of this value's class sets, or None."""
        for cls, name in self._settings().items():
            if isinstance(value, cls) and not (isinstance(value, (bool, np.bool_)) and cls is not bool):
                return name
        return None

    def _details_from(self, args, value):
        if type(value) is self.details_cls:
            return copy.deepcopy(value)
        name = self._setting_for(value)
        names = self.parameter_names()
        try:
            if len(args) > len(names):     # a class taking *args (loss_yolo_'s tags)
                return self.details_cls(*args, **{name: copy.deepcopy(value)}, **self.fixed)
            bound = dict(zip(names, args))
            bound[name] = copy.deepcopy(value)
            return self.details_cls(**bound, **self.fixed)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self.name}[...] built from {value!r}: {e}") from None

    def args_for(self, details):
        """The arguments with which this template builds a layer like ``details`` (trailing
        ones that change nothing left out), or None when none do: ``details`` is of another
        class, holds other fixed arguments, does not declare all of its template arguments
        (``template_args``), or holds settings beyond them (its printed configuration differs
        from the rebuilt layer's: a learning-rate multiplier, say)."""
        held = _declared(details)
        names = self.parameter_names()
        if (self.details_cls is not type(details) or any(n not in held for n in names)
                or not all(k in held and _same(held[k], v) for k, v in self.fixed.items())):
            return None
        args = tuple(self._normalize([_shortest(held[n]) for n in names]))
        if not self._rebuilds(args, held):
            return None
        while args and self._rebuilds(args[:-1], held):
            args = args[:-1]
        if type(details).__repr__ is not object.__repr__ and repr(self.make_details(args)) != repr(details):
            return None
        return args

    def _rebuilds(self, args, held):
        """Whether ``args`` build a layer declaring the template arguments ``held``."""
        try:
            rebuilt = _declared(self.make_details(args))
        except (TypeError, ValueError):
            return False
        return rebuilt.keys() == held.keys() and all(_same(rebuilt[k], v) for k, v in held.items())

    def actual_args(self, args, details):
        """``args`` with each value replaced by the one ``details`` declares where it differs:
        the template arguments of ``details`` as it is now."""
        held = _declared(details)
        out = list(args)
        for i, name in enumerate(self.parameter_names(args)):
            if name in held and args[i] is not None and not _same(held[name], args[i]):
                out[i] = _shortest(held[name])
        return tuple(self._normalize(out))

    def _make_node(self, details, subnet):
        return add_layer(details, subnet)

    def _build(self, args, subnet_type, pending):
        if self._takes(args, pending.peek()):
            i, value = pending.take()
            details = self._details_from(args, value)
            node = self._make_node(details, _build_subnet(subnet_type, pending))
            pending.placed[i] = node
            return node
        return self._make_node(self.make_details(args), _build_subnet(subnet_type, pending))


class loss_template(layer_template):
    """``name[args..., SUBNET]`` -> ``add_loss_layer(loss_cls(*args), SUBNET)``."""

    def _make_node(self, details, subnet):
        return add_loss_layer(details, subnet)


class _prototype:
    """The one template argument of a ``prototype_type``: a copy of the layer object, printed
    as the object, hashed by identity (one per class and printed form)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return describe(self.obj)


class _prototype_mixin:
    """A template with one argument, a ``_prototype``: each net of its type holds a copy of
    the object. Not registered: the parser cannot rebuild a user's object from its name."""

    def make_details(self, args):
        return copy.deepcopy(args[0].obj)

    def _validate(self, args):
        if len(args) != 1 or not isinstance(args[0], _prototype):
            raise TypeError(f"{self.name}[...]: build it with {self.name}[layer_object, SUBNET]")

    def parameter_names(self, args=None):
        return []


class _prototype_layer_template(_prototype_mixin, layer_template):
    def __init__(self, details_cls):
        _template.__init__(self, "add_layer")
        self.details_cls, self.fixed = details_cls, {}


class _prototype_loss_template(_prototype_mixin, loss_template):
    def __init__(self, details_cls):
        _template.__init__(self, "add_loss_layer")
        self.details_cls, self.fixed = details_cls, {}


_PROTOTYPES = {}    # (class, printed form, loss) -> (template, _prototype)


def prototype_type(details, subnet, loss):
    """dlib's ``add_layer<DETAILS, SUBNET>`` for a layer object no registered template
    rebuilds (a class of the user's own with no ``layer_template``, or settings beyond a
    template's arguments): a net type whose nets hold copies of ``details`` (deep copies, so
    the object given is never shared). Objects of one class with the same printed form give
    the same type. ``loss``: an ``add_loss_layer`` type. The type prints as
    ``add_layer[<the object>, SUBNET]``; as it names a Python object, not a registered
    template, ``dnnpy.load`` cannot rebuild it from a dnnpy file (``deserialize`` into a net
    of the type, or dlib's ``.dat`` files, read it)."""
    key = (type(details), " ".join(repr(details).split()), bool(loss))
    got = _PROTOTYPES.get(key)
    if got is None:
        cls = _prototype_loss_template if loss else _prototype_layer_template
        got = _PROTOTYPES[key] = (cls(type(details)), _prototype(copy.deepcopy(details)))
    template, proto = got
    return template[proto, subnet]


class _tag_template(_template):
    def __init__(self, name, node_cls, tag_id):
        super().__init__(name)
        self.node_cls, self.id = node_cls, tag_id
        _register(self)

    def _validate(self, args):
        if args:
            raise TypeError(f"{self.name}[SUBNET] takes only the SUBNET, got {len(args)} more arguments")

    def _build(self, args, subnet_type, pending):
        return self.node_cls(self.id, _build_subnet(subnet_type, pending))


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


def is_tag_template(obj):
    """Whether ``obj`` is a tag or skip template (``tag1``, ``skip2``, ``tag_template(...)``)."""
    return isinstance(obj, _tag_template)


def tag_with_id(kind, node_cls, tag_id):
    """The ``kind`` ("tag" or "skip") template for ``tag_id``: ``tagN`` for 1..10, else one
    declared with ``tag_template``/``skip_template`` for that id, else a new one named
    ``tag<ID>`` (dlib prints an add_tag_layer<ID> so)."""
    same = [t for t in _REGISTRY.values()
            if isinstance(t, _tag_template) and t.node_cls is node_cls and t.id == tag_id]
    plain = [t for t in same if t.name == f"{kind}{tag_id}"]
    return (plain or same or [_named_tag(kind, node_cls, f"{kind}{tag_id}", tag_id)])[0]


def tag_template(name, tag_id):
    """A tag with any id, dlib's ``template <typename SUBNET> using NAME =
    add_tag_layer<ID, SUBNET>;`` (e.g. ``utag1 = tag_template("utag1", 2101)``).

    The result is used like ``tag1``: ``utag1[SUBNET]``, ``layer(net, utag1)``, and as the tag
    argument of ``add_prev``, ``concat_``, ``resize_prev_to_tagged`` ... It prints as dlib does
    (``tag2101``) and is registered under ``name`` for ``net_type_from_string``. Declaring the
    same name with the same id again returns the same template; a name already used for
    anything else raises ValueError."""
    return _named_tag("tag", add_tag_layer, name, tag_id)


def skip_template(name, tag_id, node_cls=add_skip_layer):
    """A skip to the nearest tag with id ``tag_id`` below it, dlib's ``add_skip_layer<ID,
    SUBNET>``; see ``tag_template``. ``node_cls``: a subclass of ``add_skip_layer`` whose
    ``is_my_tag`` chooses the tag another way (the inception block's ``iskip``)."""
    return _named_tag("skip", node_cls, name, tag_id)


def check_tag(layer_name, tag):
    """``tag`` if it is a tag template (``tag1``, ``itag0``, a ``tag_template``), which a
    merge-like layer reads with ``layer(sub, tag)``; else a TypeError naming ``layer_name``."""
    if not (isinstance(tag, _tag_template) and tag.node_cls is add_tag_layer):
        raise TypeError(f"{layer_name}: expected a tag template (tag1, tag2, ...), got {tag!r}")
    return tag


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

    def _takes(self, args, value):
        # dlib's repeat takes the first argument that reaches it; here, one its block takes
        # (or a repeat_group), so that other arguments pass on to the layers below
        return isinstance(value, repeat_group) or args[1].accepts(value)

    def _build(self, args, subnet_type, pending):
        n, block = args
        group = None
        if self._takes(args, pending.peek()):
            i, value = pending.take()
            group = value.args if isinstance(value, repeat_group) else (value,)
            owner = repr(value) if isinstance(value, repeat_group) else f"argument {i}"
        copies = []
        for _ in range(n):
            if group is None:
                copies.append(block())
                continue
            inner = pending_arguments(copy.deepcopy(group), owner)
            copies.append(block._make(inner))
            if inner.left:
                raise inner.not_taken(block, copies[-1])
        node = repeat_layer(copies, _build_subnet(subnet_type, pending))
        if group is not None:
            pending.placed[i] = node
        return node


repeat = _register(_repeat_template("repeat"))


# -- a net's type as built: template arguments the layers hold ---------------------------

def actual_net_type(node):
    """The net type that describes ``node`` (a net, or a node of one) as its layers are now:
    its declared type with every template argument that a layer reads back differently
    replaced by the layer's value (``fc[16, ...]`` whose layer has 32 outputs, after a file
    or a constructor argument changed it, is ``fc[32, ...]``). None for a node not built from
    a net type."""
    return _actual(node, [])


def refresh_net_types(net):
    """Make ``net.net_type`` (and every node's) its ``actual_net_type``. Returns the
    changes, ``(node, template name, parameter, declared, actual)`` each, for a message."""
    changes = []
    _actual(net, changes, update=True)
    return changes


def _actual(node, changes, update=False):
    if isinstance(node, input_node):
        return type(node.input_layer())
    nt = getattr(node, "net_type", None)
    if nt is None:
        return None
    sub = _actual(node.subnet_node(), changes, update)
    if sub is None:
        return None
    args, t = nt.args, nt.template
    if isinstance(t, layer_template):
        details = node.loss_details() if isinstance(node, add_loss_layer) else node.layer_details()
        args = t.actual_args(nt.args, details)
        changes.extend((node, t.name, name, a, b)
                       for name, a, b in zip(t.parameter_names(args), nt.args, args) if not _same(a, b))
    elif isinstance(node, repeat_layer):
        blocks = {_actual(c, changes, update) for c in node.copies}
        if len(blocks) == 1 and None not in blocks:
            args = (args[0], blocks.pop())
    new = nt if (args == nt.args and sub is nt.subnet) else t[args + (sub,)]
    if update:
        node.net_type = new
    return new
