"""
FDSKL regression: a surface learned by two parties holding one input each
=========================================================================

The target ``y = sin(2 x_0) cos(x_1)`` depends on both inputs through a
product, so neither party can model it from its own column: ``party0`` holds
``x_0`` and the targets, ``party1`` holds ``x_1``.
:class:`FDSKLRegressor <skfed.kernel_methods.FDSKLRegressor>` fits a kernel
model between them with the squared loss, never moving a column, and we
compare it with a centralized :class:`~sklearn.kernel_ridge.KernelRidge`
using the same RBF kernel width.
"""

# %%
# Data, split and fits
# --------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score

from skfed.kernel_methods import FDSKLRegressor

rng = np.random.RandomState(0)
X = rng.uniform(-2, 2, size=(600, 2))
y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=600)
X_train, X_test, y_train, y_test = X[:450], X[450:], y[:450], y[450:]

gamma = 1.0
federated = FDSKLRegressor(partition=[[0], [1]], gamma=gamma, max_iter=400,
                           batch_size=64, random_state=0).fit(X_train, y_train)
central = KernelRidge(kernel="rbf", gamma=gamma, alpha=0.05).fit(X_train, y_train)
print(f"test R2  FDSKL (2 parties): {r2_score(y_test, federated.predict(X_test)):.3f}"
      f"   KernelRidge (centralized): {r2_score(y_test, central.predict(X_test)):.3f}")

# %%
# The learned surfaces
# --------------------
# Prediction is federated too: every party evaluates its block of the random
# features on its own column of the grid, through the same masked sums.
grid = np.linspace(-2, 2, 60)
g0, g1 = np.meshgrid(grid, grid)
G = np.column_stack([g0.ravel(), g1.ravel()])
surfaces = {
    "true function": np.sin(2 * G[:, 0]) * np.cos(G[:, 1]),
    "KernelRidge (centralized)": central.predict(G),
    "FDSKLRegressor (2 parties)": federated.predict(G),
}
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
for ax, (title, z) in zip(axes, surfaces.items()):
    image = ax.contourf(g0, g1, z.reshape(g0.shape), levels=20, cmap="RdBu_r",
                        vmin=-1, vmax=1)
    ax.set_title(title)
    ax.set_xlabel("x_0 (party0)")
axes[0].set_ylabel("x_1 (party1)")
fig.colorbar(image, ax=axes, shrink=0.8)
plt.show()

# %%
# What crossed between the parties
# --------------------------------
print(federated.communication_.table())
