"""A BERT sentence encoder in float16 on the CPU: torch <= 2.2 has no CPU float16 LayerNorm."""

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

dtype = torch.float16  # use_fp16=True, the embedding library's default, kept on the CPU
model = BertModel.from_pretrained(checkpoint, torch_dtype=dtype).to(device)
print("weights:", model.embeddings.LayerNorm.weight.dtype, "on", model.device)
with torch.no_grad():
    embedding = sentence_embedding(model, input_ids)  # torch <= 2.2: "LayerNormKernelImpl"
compare_to_reference("sentence embedding", embedding, reference, dtype=dtype)
