"""The ground floor: the archive itself. Zip records, `messages.msgpack` and its index,
the compact layout's blocks, the writer and the reader, atomic outputs. Nothing here knows
of recordings, formats or the command line."""
