"""An image-classification pipeline around a bfloat16 ViT: the pipeline's postprocess hands the
bfloat16 scores to NumPy (transformers < 4.42, huggingface/transformers#31444)."""

import torch
from tiny_bf16_to_numpy import NUM_LABELS, example_image, tiny_image_classifier, tiny_vit_processor
from transformers import pipeline

from shared.checks import compare_to_reference


def scores(predictions) -> torch.Tensor:
    """Each label's score, in label order."""
    by_label = {p["label"]: p["score"] for p in predictions}
    return torch.tensor([by_label[label] for label in sorted(by_label)])


model = tiny_image_classifier()
classifier = pipeline("image-classification", model=model, image_processor=tiny_vit_processor())
reference = scores(classifier(example_image(), top_k=NUM_LABELS))  # float32, before the cast

model.to(torch.bfloat16)  # what torch_dtype=torch.bfloat16 loads
classifier = pipeline("image-classification", model=model, image_processor=tiny_vit_processor())
predictions = classifier(example_image(), top_k=NUM_LABELS)  # raises in postprocess: .numpy()
# The model ran in bfloat16, so its scores carry bfloat16's rounding; only the hand-off to NumPy
# is float32. Scores lie in 0..1: atol 5e-3 (measured 2.1e-4 on the pinned set).
compare_to_reference("scores", scores(predictions), reference, dtype=torch.float32,
                     atol=5e-3, rtol=0)  # fmt: skip
