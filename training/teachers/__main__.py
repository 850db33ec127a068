"""``python -m training.teachers …``: the same as ``griffon teachers …``."""

from training.teachers.commands import main

main()
