"""Work on archives and on many files at once: verify, recover, repack, adopt, batch
conversion (process pool) and Dask."""
