"""Two public Quick, Draw! classifiers read as *teachers*, with our own code (torch; no TensorFlow).

The teachers (both trained by their authors on Google's full Quick, Draw! dataset, 345 categories):

- **DoodleNet**, by ml5.js: https://github.com/ml5js/ml5-data-and-models (``models/doodlenet/``,
  commit 0612a3e7c51cbffdc5db701dff49d16d1ac26fa8), MIT licence, Copyright (c) 2018 ml5;
- **quickdraw-prediction-model**, a small ResNet by jinnyday0719:
  https://github.com/jinnyday0719/quickdraw-prediction-model (``web/tfjs_model/``, commit
  bb1d600a7b2139e0f36cb199eac8ab30dda71e4f), MIT licence, Copyright (c) 2024 안서진.

Each folder keeps its ``LICENSE``, which must travel with any copy of the files. The drawings they
learned from are Google's Quick, Draw! dataset (CC BY 4.0).

Both are TensorFlow.js *layers* models: ``model.json`` holds the Keras topology and a
``weightsManifest`` (names, shapes and dtypes of the weights, concatenated in the shard files).
:class:`LayersNetwork` interprets that graph in torch (NCHW inside; Keras kernels are
``(h, w, in, out)``, ``same`` padding is TensorFlow's, asymmetric for even strides, and ``Flatten``
reads channels-last). Their class orders are mapped onto ours by name (spaces, underscores and case
aside); a class missing on either side is an error.

Both learned from the dataset's ``numpy_bitmap`` files (28 × 28, divided by 255: the ResNet's
``src/train.py`` and DoodleNet's notebook), so both read the same render (:func:`render`), the one
googlecreativelab/quickdraw-dataset issue 19 reproduces with Cairo: the simplified
drawing (:func:`model.strokes.simplify_drawing`) centred in a 256 box, padded by 16 units on each
side plus half a line, drawn with round caps and joins and a 16-unit anti-aliased line, reduced to
28 × 28; white ink on black, floats in [0, 1]. It differs from that Cairo code by 0.002 a pixel on
average and gives the same top-1 within a point. Top-1 on our training split: DoodleNet 68.7 %, the
ResNet 74.9 %, their geometric mean 74.7 % (Kontour lines: 51.8, 52.0, 54.6; the first half of the
strokes: 39.6, 44.5, 43.9). Thinner or thicker lines, other margins, a blur, a crisper edge, a
half-pixel shift or a gamma read no better (DoodleNet falls to 5 % on a half-pixel bilinear shift).

``griffon teachers score`` prints each teacher's top-1 (and that of their geometric mean) on
whole, Kontour-style and half drawings; ``griffon teachers metrics --split dev`` every
headline metric of the experiments table (Kontour deck and Pictomania tables included);
``griffon teachers cache --out FILE`` stores their answers on every training drawing as a
compact ``.npz`` keyed by ``key_id`` (:func:`read_cache`), what ``--teacher-cache`` distils from
(:mod:`training.taught`).

Modules: :mod:`~training.teachers.published` (the teachers and their answers),
:mod:`~training.teachers.answers` (the cache), :mod:`~training.teachers.scores` (their scores and
metrics), :mod:`~training.teachers.commands` (the command line).
"""

from training.teachers.answers import CACHE_VERSION, TeacherCache, read_cache, write_cache
from training.teachers.published import (
    EXTRA_DATA,
    MODELS_ENV,
    OUR_CLASSES,
    TEACHER_NAMES,
    Teacher,
    TeacherError,
    default_models_root,
    geometric_mean,
    load_teachers,
    read_our_classes,
    teachers_probabilities,
)
from training.teachers.scores import METRIC_COLUMNS, VIEWS, teacher_metrics, view_of

__all__ = [
    "CACHE_VERSION", "EXTRA_DATA", "METRIC_COLUMNS", "MODELS_ENV", "OUR_CLASSES", "TEACHER_NAMES", "VIEWS",
    "Teacher", "TeacherCache", "TeacherError", "default_models_root", "geometric_mean", "load_teachers",
    "read_cache", "read_our_classes", "teacher_metrics", "teachers_probabilities", "view_of", "write_cache",
]
