"""A sensor series taken from a DataFrame (float64), made a tensor with torch.from_numpy and fed
to a float32 PatchTST forecaster: the patch embedding's Linear meets it."""

import torch
from tiny_float64_input import in_float64, sensor_series, tiny_patchtst

from shared.checks import compare_to_reference

model = tiny_patchtst()

past_values = torch.from_numpy(sensor_series())  # DataFrame.values: float64
print("past_values:", past_values.dtype, "| model:", model.dtype)

with torch.no_grad():
    reference = in_float64(model)(past_values=past_values).prediction_outputs.float()
    forecast = model(past_values=past_values).prediction_outputs  # raises in the patch Linear
compare_to_reference("forecast", forecast, reference, dtype=torch.float32)
