"""An fp16 Whisper checkpoint loaded with no dtype (float16 on transformers 5.x): the features of
its feature extractor are cast to `model.dtype` before the encoder."""

import torch
from tiny_transformers_v5_dtype import (
    example_audio,
    feature_extractor,
    save_whisper_fp16,
    saved_dtype,
)
from transformers import WhisperForConditionalGeneration

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_whisper_fp16()  # tiny random weights, saved in float16 (config.json says so)

model = WhisperForConditionalGeneration.from_pretrained(checkpoint).to(device)  # no dtype
print("config.json dtype:", saved_dtype(checkpoint), "| loaded:", model.dtype)

# The documented preprocessing: WhisperFeatureExtractor returns float32 log-mel features.
features = feature_extractor()(example_audio(), sampling_rate=16000, return_tensors="pt")
input_features = features.input_features.to(device)
print("input_features:", input_features.dtype, tuple(input_features.shape))

with torch.no_grad():
    output = model.model.encoder(input_features.to(model.dtype)).last_hidden_state  # the fix

reference = WhisperForConditionalGeneration.from_pretrained(checkpoint, torch_dtype=torch.float32)
with torch.no_grad():
    expected = reference.to(device).model.encoder(input_features).last_hidden_state
    compare_to_reference("encoder output", output, expected, dtype=model.dtype)
