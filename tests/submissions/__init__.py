"""Builders of submitted notebooks for the grading tests (tiny nbgrader notebooks and variants
of the course notebook), named by scenario."""
