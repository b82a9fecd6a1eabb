"""What the command line says of CARLA before importing any of it: the format's title, which
`nanorec --help` lists `nanorec carla` by (see `nanorec.contract.COMMANDS_GROUP`)."""

TITLE = "CARLA recorder"
