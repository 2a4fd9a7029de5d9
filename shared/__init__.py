"""Common machinery of the gallery: case metadata, running variants, verdicts, checks."""
