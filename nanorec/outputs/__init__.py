"""What any recording can be written as besides its native file: MCAP (Foxglove's schemas),
Arrow/Parquet tables, CSV/NDJSON rows, the generic timeline picture."""
