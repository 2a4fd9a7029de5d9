"""Save a tiny model with ``save_pretrained`` so variants load it back the documented way.

Loading through ``from_pretrained(..., dtype=...)`` matters: it is the real loading code whose
dtype handling (what gets cast, what stays float32) the cases are about.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def save_pretrained_to_temp(model) -> Path:
    """Save ``model`` (a PreTrainedModel / ModelMixin) to a temporary folder and return it.

    The folder is removed when the process exits; the harness also points ``tempfile`` at a
    per-run folder that it removes itself.
    """
    folder = Path(tempfile.mkdtemp(prefix="gallery-checkpoint-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    model.save_pretrained(folder)
    return folder


def sub_config(config_class, value):
    """A composite config's part from a config object or the dict config.json gives back."""
    return value if isinstance(value, config_class) else config_class(**(value or {}))


def quiet_hf_logging() -> None:
    """No progress bars or load reports in the variants' output: only the evidence."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
