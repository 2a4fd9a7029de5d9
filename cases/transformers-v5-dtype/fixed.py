"""A bf16 LLM checkpoint loaded with `torch_dtype=torch.float32` (the 4.x default): the caller's
float32 embedding feeds it, as it did before transformers 5."""

import torch
from tiny_transformers_v5_dtype import (
    HIDDEN,
    SPEECH_VOCAB,
    save_qwen2_bf16,
    saved_dtype,
    speech_token_ids,
)
from transformers import Qwen2ForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_qwen2_bf16()  # tiny random weights, saved in bfloat16 (config.json says so)

llm = Qwen2ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)  # fix
print("config.json dtype:", saved_dtype(checkpoint), "| loaded:", llm.dtype)

# The caller's own speech-token embedding, kept float32 (as CosyVoice keeps its speech modules).
torch.manual_seed(3)
speech_embedding = torch.nn.Embedding(SPEECH_VOCAB, HIDDEN).to(device)
embeds = speech_embedding(speech_token_ids(device))
print("inputs_embeds:", embeds.dtype)

with torch.no_grad():
    output = llm.model(inputs_embeds=embeds).last_hidden_state

reference = Qwen2ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
with torch.no_grad():
    expected = reference.model(inputs_embeds=embeds).last_hidden_state
    compare_to_reference("LLM hidden states", output, expected, dtype=torch.float32)
