"""What case scripts import: small, documented, and all they need.

- ``shared.checks``: ``pick_device`` / ``record_device``; ``compare_to_reference`` and
  ``check_that`` (a fix's proof against a float32 reference); ``measure_error``,
  ``measure_nan``, ``measure_changed`` (the symptom of a failure that raises nothing).
- ``shared.tiny_models``: ``save_pretrained_to_temp`` (a tiny model saved for
  ``from_pretrained``), ``sub_config``, ``quiet_hf_logging``; ``tiny_seed`` and ``knob`` (the
  arbitrary choices a silent symptom must not hang on, perturbed by the tests).
- ``shared.culprit``: ``audit`` / ``format_audit`` and ``MismatchGuard`` (where a dtype/device
  mismatch starts), for the cases and for your own models.
- ``shared.distributed``: the rank layout of multi-rank variants; ``one_gloo_rank`` (a process
  group of one CPU rank, as torchrun would start it).
- ``shared.record``: what a running variant tells the harness (written by ``shared.checks``).

The machinery that runs and judges the cases is ``shared.harness``; cases never import it.
"""
