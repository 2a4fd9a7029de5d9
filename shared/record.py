"""What a running variant tells the harness besides its exception: device, checks, measurements,
knobs.

The helpers in ``shared.checks`` append here while a variant runs; the harness's executor
writes it out with the outcome. Run by hand (``python cases/x/fixed.py``) it is never written.
"""

# knobs: the arbitrary tiny-model choices this run made (shared.tiny_models.knob / tiny_seed).
RECORD: dict = {"device": None, "checks": [], "measurements": [], "knobs": {}}
