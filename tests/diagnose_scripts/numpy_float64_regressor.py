"""Not a case: tabular data from NumPy (float64 by default) into a float32 regressor.

From reports of "expected scalar type Float but found Double" / "mat1 and mat2 must have the
same dtype, but got Double and Float" when an np.random array becomes a tensor with
torch.from_numpy (duoke360.com/post/34176, blog.51cto.com/u_16175525/6637440). Expected: the first layer
is named, with float64 data as the mechanism."""

import numpy as np
import torch
from torch import nn

features = np.random.default_rng(0).normal(size=(32, 6))  # float64
regressor = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
loss = nn.functional.mse_loss(regressor(torch.from_numpy(features)), torch.zeros(32, 1))
print(float(loss))
