"""Class weights for an imbalanced dataset computed with NumPy (float64, as sklearn's
compute_class_weight returns them) and given to CrossEntropyLoss over a float32 classifier's
logits: the loss of a custom Trainer.compute_loss."""

import numpy as np
import torch
from tiny_float64_input import in_float64, labelled_batch, tiny_classifier

from shared.checks import compare_to_reference

model = tiny_classifier()
batch = labelled_batch()

labels = batch["labels"].numpy()
class_weights = len(labels) / (model.config.num_labels * np.bincount(labels))  # "balanced"
loss_fct = torch.nn.CrossEntropyLoss(weight=torch.from_numpy(class_weights))
print("class weights:", loss_fct.weight.dtype, "| model:", model.dtype)

reference_logits = in_float64(model)(batch["input_ids"]).logits
reference = torch.nn.functional.cross_entropy(
    reference_logits, batch["labels"], weight=torch.from_numpy(class_weights)
).float()
logits = model(batch["input_ids"]).logits
loss = loss_fct(logits, batch["labels"])  # raises: float32 logits, float64 weights
loss.backward()
compare_to_reference("loss", loss.detach(), reference.detach(), dtype=torch.float32)
