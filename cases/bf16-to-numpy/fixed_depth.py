"""A depth-estimation pipeline around a bfloat16 DPT: the pipeline's postprocess hands the
bfloat16 depth map to NumPy: fixed here by casting the depth to float32 before postprocess."""

import torch
from tiny_bf16_to_numpy import example_image, tiny_depth_estimator, tiny_dpt_processor
from transformers import pipeline

from shared.checks import compare_to_reference

model = tiny_depth_estimator()
estimator = pipeline("depth-estimation", model=model, image_processor=tiny_dpt_processor())
reference = estimator(example_image())["predicted_depth"]  # float32, before the cast


class Float32Postprocess(type(estimator)):  # DepthEstimationPipeline, casting before NumPy
    def postprocess(self, model_outputs, **kwargs):
        model_outputs["predicted_depth"] = model_outputs["predicted_depth"].float()
        return super().postprocess(model_outputs, **kwargs)


model.to(torch.bfloat16)  # what torch_dtype=torch.bfloat16 loads
estimator = pipeline("depth-estimation", model=model, image_processor=tiny_dpt_processor(),
                     pipeline_class=Float32Postprocess)  # fmt: skip
depth = estimator(example_image())["predicted_depth"]
# Relative depth (the tiny head's is ~1e-9), compared as the pipeline's depth image scales it.
# The model ran in bfloat16: bfloat16's tolerance; only the hand-off to NumPy is float32.
scale = reference.max()
compare_to_reference("depth / max", depth / scale, reference / scale, dtype=torch.float32,
                     atol=5e-2, rtol=5e-2)  # fmt: skip
