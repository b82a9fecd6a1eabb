"""What the command line says of pbstream before importing any of it: the format's title,
which `nanorec --help` lists `nanorec pbstream` by (see `nanorec.contract.COMMANDS_GROUP`)."""

NAME = "pbstream"
TITLE = "Cartographer pbstream"
