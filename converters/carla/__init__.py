"""CARLA recorder files (`.log`/`.rec`): codec, generator, conversion, world state, queries."""
