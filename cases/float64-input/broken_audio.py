"""A recording read as float64 (soundfile's default), made a tensor with torch.from_numpy (which
keeps the dtype) and fed straight to a float32 Wav2Vec2 model."""

import torch
from tiny_float64_input import in_float64, recording, tiny_wav2vec2

from shared.checks import compare_to_reference

model = tiny_wav2vec2()

speech = recording()  # as soundfile.read(path) returns it: float64
input_values = torch.from_numpy(speech).unsqueeze(0)
print("input_values:", input_values.dtype, "| model:", model.dtype)

with torch.no_grad():
    reference = in_float64(model)(torch.from_numpy(speech).unsqueeze(0)).logits.float()
    logits = model(input_values).logits  # raises in the feature encoder's first conv
compare_to_reference("logits", logits, reference, dtype=torch.float32)
