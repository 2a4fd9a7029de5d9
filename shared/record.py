"""What a running variant tells the harness besides its exception: device and checks.

The helpers in ``shared.checks`` append here while a variant runs; the executor writes it out
with the outcome. Run by hand (``python cases/x/fixed.py``) it is simply never written.
"""

RECORD: dict = {"device": None, "device_reason": "", "checks": []}
