"""Griffon's sketch recognizer: a CNN over rasterized Quick, Draw! strokes.

>>> from model import Guesser
>>> g = Guesser.load()                      # the shipped weights
>>> g.guess(drawing, top_k=3)               # [Guess(label="cat", prob=0.61), ...]
>>> s = g.session(); s.add_stroke(stroke)   # live, stroke by stroke (undo/clear too)

This package knows nothing of games or HTTP.
"""

from model.checkpoint import CheckpointError
from model.guesser import DEFAULT_WEIGHTS, Guess, Guesser, GuessSession, Views
from model.raster import RasterSpec, rasterize
from model.strokes import DrawingError, simplify_drawing, validate_drawing

__all__ = [
    "DEFAULT_WEIGHTS",
    "CheckpointError",
    "DrawingError",
    "Guess",
    "GuessSession",
    "Guesser",
    "RasterSpec",
    "rasterize",
    "simplify_drawing",
    "validate_drawing",
    "Views",
]
