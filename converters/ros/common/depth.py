"""How deep a message definition's types hold each other, found without recursion.

Decoders, encoders, md5 sums, type hashes and the bridge each walk a type's fields into the
types they hold, one Python frame a level; a definition chaining thousands of types (or
IDL modules) would end them in a RecursionError (#34 item 5). Both sides of the family
refuse a definition deeper than `MAX_DEPTH` when they parse it, so nothing after needs to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from nanorec.errors import FormatError

#: The deepest nesting read (types holding types, IDL modules): real ones are under 10.
MAX_DEPTH: Final = 100


def check_depth(root: str, children: Callable[[str], Iterable[str]]) -> None:
    """FormatError when a chain of types from `root` (each type's `children`: the defined
    types its fields use) is more than `MAX_DEPTH` long. A type holding itself is left to
    the decoders, which name it."""
    height: dict[str, int] = {}
    on_path = {root}
    stack = [(root, iter(children(root)))]
    while stack:
        name, pending = stack[-1]
        for child in pending:
            if child not in height and child not in on_path:
                on_path.add(child)
                stack.append((child, iter(children(child))))
                break
        else:
            stack.pop()
            on_path.discard(name)
            height[name] = 1 + max((height.get(c, 0) for c in children(name)), default=0)
            if height[name] > MAX_DEPTH:
                raise FormatError(
                    f"the definition of {root} nests types more than {MAX_DEPTH} deep (at {name})"
                )
