"""A verb's parameters converted without pydantic when nothing needs it (issue 33 item 4).

typer >= 0.2x converts each value through a pydantic `TypeAdapter` it builds for the
parameter when the command runs, for every parameter but a flag, given or not: `nanorec
info FILE` (a string and a dozen unset format options) imported pydantic and built nine
schemas, ~150-300 ms CPU, more than numpy. A string for a plain `str` parameter, None for
any, and an unset parameter's default of its own plain type (`nanorec view`'s port 0) come
out of that adapter unchanged: those are passed through here; any other value (a number
given, a path, a list...) goes to typer's own conversion, built then, so every message and
check stays typer's. Older typers convert with click's types and are left alone.
"""

from __future__ import annotations

from nanorec.cli._click import Command, Context, Parameter


class _PassThrough:
    """Stands in for typer's runtime conversion of one parameter until a value needs it."""

    def __init__(self, param: Parameter) -> None:
        self.param = param

    def coerce(self, value: object, param: Parameter, ctx: Context) -> object:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        descriptor = param.type_descriptor
        simple = descriptor.parameter_info.parser is None and descriptor.file_annotation is None
        if simple and not many and _unchanged(descriptor.annotation, value, param, ctx):
            return value
        self.param._runtime_param = None  # typer's own, built now (pydantic imported)
        return self.param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _unchanged(annotation: object, value: object, param: Parameter, ctx: Context) -> bool:
    """Whether typer's conversion gives `value` back as it is: a string for a `str`, or the
    parameter's own default of its plain type (typer would check it against min/max: ours
    are declared within them)."""
    if annotation is str and isinstance(value, str):
        return True
    source = ctx.get_parameter_source(param.name) if param.name else None
    default = getattr(source, "name", None) == "DEFAULT"
    return default and annotation in _PLAIN and type(value) is annotation


#: The types whose default is passed through as it is.
_PLAIN = (bool, int, float, str)


def without_pydantic(command: Command) -> Command:
    """`command` with each parameter converting as `_PassThrough` says (see the module), its
    help option (made when first parsed, unset: None) included."""
    for param in command.params:
        _pass_through(param)
    if hasattr(command, "get_help_option"):
        made = command.get_help_option
        command.get_help_option = lambda ctx: _pass_through(made(ctx))
    return command


def _pass_through(param: Parameter) -> Parameter:
    known = hasattr(param, "type_descriptor") and hasattr(param, "get_runtime_param")
    if known and getattr(param, "_runtime_param", "absent") is None:
        param._runtime_param = _PassThrough(param)
    return param
