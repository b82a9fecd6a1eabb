"""`nanorec view`: a local web page that scrubs any recording by random seek (issue #37).

The archive seeks any message in microseconds; this package puts a timeline on that. It is
format-neutral: `api` answers JSON from the `Recording` surface (the index for counts and
times, `message(n)` for the inspector, `rows(kind)` for series) and from the `Viewable`
capability for what a format draws; `server` serves that and the page in `static/` (shipped
as package data: no CDN, works offline) on 127.0.0.1 with the standard library alone.
"""
