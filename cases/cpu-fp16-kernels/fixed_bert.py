"""A BERT sentence encoder in float32 on the CPU (use_fp16=False): the upstream advice."""

import torch
from tiny_cpu_fp16_kernels import cpu, example_input_ids, save_tiny_bert, sentence_embedding
from transformers import BertModel

from shared.checks import compare_to_reference

device = cpu()  # an embedding service without a GPU
checkpoint = save_tiny_bert()  # tiny random BERT, saved in float32
input_ids = example_input_ids()

reference_model = BertModel.from_pretrained(checkpoint, torch_dtype=torch.float32)
with torch.no_grad():
    reference = sentence_embedding(reference_model, input_ids)  # float32 reference

dtype = torch.float32  # the fix: float32 on the CPU (use_fp16=False)
model = BertModel.from_pretrained(checkpoint, torch_dtype=dtype).to(device)
print("weights:", model.embeddings.LayerNorm.weight.dtype, "on", model.device)
with torch.no_grad():
    embedding = sentence_embedding(model, input_ids)
compare_to_reference("sentence embedding", embedding, reference, dtype=dtype)
