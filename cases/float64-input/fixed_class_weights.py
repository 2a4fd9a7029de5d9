"""Class weights for an imbalanced dataset computed with NumPy (float64) and made a float32
tensor for CrossEntropyLoss over a float32 classifier's logits."""

import numpy as np
import torch
from tiny_float64_input import in_float64, labelled_batch, tiny_classifier

from shared.checks import compare_to_reference

model = tiny_classifier()
batch = labelled_batch()

labels = batch["labels"].numpy()
class_weights = len(labels) / (model.config.num_labels * np.bincount(labels))  # "balanced"
loss_fct = torch.nn.CrossEntropyLoss(weight=torch.tensor(class_weights, dtype=torch.float32))
print("class weights:", loss_fct.weight.dtype, "| model:", model.dtype)

reference_logits = in_float64(model)(batch["input_ids"]).logits
reference = torch.nn.functional.cross_entropy(
    reference_logits, batch["labels"], weight=torch.from_numpy(class_weights)
).float()
logits = model(batch["input_ids"]).logits
loss = loss_fct(logits, batch["labels"])
loss.backward()
compare_to_reference("loss", loss.detach(), reference.detach(), dtype=torch.float32)
