"""The composition root: the `griffon` command line, which may import every package."""
