"""dlib's other spellings of a net type, beside the bracket templates (``templates.py``):

* ``add_layer[con_(16, 5, 5, 1, 1), SUBNET]``: dlib's ``add_layer<con_<16,5,5,1,1>, SUBNET>``,
  the same type as ``con[16, 5, 5, 1, 1, SUBNET]`` (the template of the layer object's class,
  with the object's template arguments); ``add_loss_layer[loss_metric_(), SUBNET]`` likewise.
  Any other layer object (a class of your own, or settings no template argument carries)
  gives a type whose nets hold copies of it (``templates.prototype_type``), as dlib's
  ``add_layer<my_layer_, SUBNET>``;
* ``add_tag_layer[ID, SUBNET]`` (``tagN``, or the tag declared for that id) and
  ``add_skip_layer[tag1, SUBNET]``;
* ``alias``: a Python function standing for a dlib ``using`` alias, usable with brackets
  (``res[SUBNET]``) as well as called (``res(SUBNET)``).

The node classes (``dnnpy.add_layer``, ...) live in ``core``, below the templates, so their
bracket form is installed here (``bracket_form``).
"""

from __future__ import annotations

import functools
import numbers

from .core import add_layer, add_loss_layer, add_skip_layer, add_tag_layer
from .templates import is_tag_template, layer_template, prototype_type, registered, tag_with_id

__all__ = ["template_of", "alias"]


def template_of(details):
    """``(template, args)``: the registered template and arguments that build a layer like
    ``details`` (a layer or loss object), so ``template[args + (SUBNET,)]`` is dlib's
    ``add_layer<DETAILS, SUBNET>``. Among the templates of its class, those whose fixed
    arguments it matches are preferred, most fixed first (``max_pool_(0, 0, 1, 1)`` is
    ``max_pool_everything``). Raises TypeError when none rebuilds it: settings beyond the
    template arguments (multipliers, a loss's options) are not part of a type."""
    templates = registered()[0].values()
    candidates = sorted((t for t in templates
                         if isinstance(t, layer_template) and t.details_cls is type(details)),
                        key=lambda t: (-len(t.fixed), t.name))
    for t in candidates:
        args = t.args_for(details)
        if args is not None:
            return t, args
    name = type(details).__name__
    if not candidates:
        raise TypeError(f"no template builds a {name}: declare one with layer_template(\"name\", "
                        f"{name}) (or loss_template)")
    raise TypeError(f"{details!r} holds settings that no template arguments of "
                    f"{', '.join(t.name for t in candidates)} rebuild (a type names layers by their "
                    f"template arguments only): declare the type, then configure the built layer, or "
                    f"pass the object to the net's constructor: net_type(obj)")


def _details_bracket(kind, loss):
    def getitem(cls, items):
        """dlib's ``add_layer<DETAILS, SUBNET>`` as ``add_layer[details, SUBNET]``: the net type
        of the template that builds ``details`` (``add_layer[con_(16, 5, 5, 1, 1), SUBNET]`` is
        ``con[16, 5, 5, 1, 1, SUBNET]``; ``add_loss_layer`` likewise for losses)."""
        items = items if isinstance(items, tuple) else (items,)
        if len(items) != 2:
            raise TypeError(f"{kind}[details, SUBNET] takes a layer object and the SUBNET, got "
                            f"{len(items)} arguments")
        details, subnet = items
        if isinstance(details, type):
            raise TypeError(f"{kind}[...]: give a layer OBJECT, e.g. {kind}[con_(16, 5, 5, 1, 1), SUBNET] "
                            f"for dlib's {kind}<con_<16,5,5,1,1>, SUBNET> (the template arguments are "
                            f"the object's constructor arguments), got the class {details.__name__}")
        is_loss = hasattr(details, "compute_loss_value_and_gradient")
        if not is_loss and not (hasattr(details, "forward") or hasattr(details, "forward_inplace")):
            raise TypeError(f"{kind}[...]: {details!r} is not a layer object (it has no forward, "
                            f"forward_inplace or compute_loss_value_and_gradient)")
        if is_loss != loss:
            raise TypeError(f"{kind}[...]: {type(details).__name__} is a "
                            f"{'loss' if not loss else 'computational layer'}: use "
                            f"{'add_loss_layer' if not loss else 'add_layer'}[...]")
        try:
            t, args = template_of(details)
        except TypeError:   # no registered template rebuilds it: a type holding copies of it
            return prototype_type(details, subnet, loss)
        return t[args + (subnet,)]
    return getitem


def _tag_bracket(kind, node_cls, takes_template):
    def getitem(cls, items):
        """dlib's ``add_tag_layer<ID, SUBNET>`` as ``add_tag_layer[ID, SUBNET]`` (``tagN``, or
        the tag declared for that id), and ``add_skip_layer<tag1, SUBNET>`` as
        ``add_skip_layer[tag1, SUBNET]`` (a tag template or an id)."""
        if not isinstance(items, tuple) or len(items) != 2:
            raise TypeError(f"{kind}[ID, SUBNET] takes the tag id and the SUBNET")
        tag_id, subnet = items
        if takes_template and is_tag_template(tag_id):
            tag_id = tag_id.id        # dlib's add_skip_layer<tag1, SUBNET> names the tag
        if isinstance(tag_id, bool) or not isinstance(tag_id, numbers.Integral) or tag_id < 0:
            raise TypeError(f"{kind}[ID, SUBNET]: ID must be an integer >= 0"
                            + (" or a tag template (tag1)" if takes_template else "") + f", got {tag_id!r}")
        return tag_with_id("skip" if takes_template else "tag", node_cls, int(tag_id))[subnet]
    return getitem


add_layer.bracket_form = classmethod(_details_bracket("add_layer", False))
add_loss_layer.bracket_form = classmethod(_details_bracket("add_loss_layer", True))
add_tag_layer.bracket_form = classmethod(_tag_bracket("add_tag_layer", add_tag_layer, False))
add_skip_layer.bracket_form = classmethod(_tag_bracket("add_skip_layer", add_skip_layer, True))


class alias:
    """A dlib ``using`` alias written as a Python function, usable with brackets like a
    template as well as called::

        @dnnpy.alias
        def res(SUBNET):    # dlib: template <typename SUBNET> using res = relu<residual<...>>;
            return relu[add_prev1[bn_con[con[8, 3, 3, 1, 1, tag1[SUBNET]]]]]

        net_type = loss_multiclass_log[fc[10, res[res[input[np.uint8]]]]]   # also res(res(...))

    Arguments in brackets are the function's positional arguments (``res_n[8, SUBNET]``
    calls ``res_n(8, SUBNET)``); ``repeat[9, res, SUBNET]`` takes it as it takes a function."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"alias: expected a function returning a net type, got {fn!r}")
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __getitem__(self, items):
        return self.fn(*(items if isinstance(items, tuple) else (items,)))

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"alias({getattr(self.fn, '__name__', self.fn)!r})"
