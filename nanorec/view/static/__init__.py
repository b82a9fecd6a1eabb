"""The page of `nanorec view` (index.html, app.js, style.css): package data, read with
`importlib.resources` (see `nanorec.view.server`)."""
