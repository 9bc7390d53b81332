"""Holds the dataset script and evaluate module folders inside an installed wheel.

In a source checkout these live at the project root (`datasets/`, `metrics/`); setup.cfg maps
them here at build time so `bold_eval.core.paths` finds them after `pip install .` too.
"""
