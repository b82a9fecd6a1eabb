"""A bag file's bytes back from its archive: the file's skeleton with its messages' datas
joined in, or its zstd member as it was. Export writes them; `verify` reads them through
(`Ros2Recording.check_members`), so an archive it passes exports.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from nanorec.archive.reader import ArchiveReader
from nanorec.errors import FormatError

from .datas import Datas
from .members import skeleton_member, zstd_member
from .meta import Ros2Meta
from .storage_join import join


def file_pieces(reader: ArchiveReader, meta: Ros2Meta, index: int) -> Iterator[bytes | memoryview]:
    """Bag file `index`, as consecutive pieces."""
    entry = meta.files[index]
    if entry["compressed"]:
        yield from reader.member_chunks(zstd_member(index))
        return
    order = len(reader) if meta.in_archive_order(index) else meta.numbers_of_file(index)
    datas = Datas(reader, order)
    reader.advise_sequential()
    # the skeleton as a view of the mapping (a few hundred MB for millions of messages)
    skeleton = reader.member_view(skeleton_member(index))
    try:
        yield from join(entry["storage"], skeleton, datas)
    except FormatError as error:  # say which member: the skeleton is what joins the file
        raise FormatError(
            f"joining {skeleton_member(index)}: {error.message}", offset=error.offset
        ) from None
    finally:
        with contextlib.suppress(BufferError):  # a view of it still alive: freed with it
            skeleton.release()
