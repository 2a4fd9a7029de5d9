"""A user's script importing its own `shared` package; exits with status 3."""

import sys

import shared

print(f"shared is {shared.OWNER}")
sys.exit(3)
