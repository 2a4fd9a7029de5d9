"""A user's own top-level package that happens to be named like the gallery's."""

OWNER = "the user's project"
