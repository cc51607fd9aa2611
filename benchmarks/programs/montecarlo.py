"""Script: Monte Carlo price of an Asian call option, 1,000 paths a batch, Python loops."""
import math

import numpy

from ._common import njit

NAME = "montecarlo"
SIZES = {"small": {"batches": 10, "steps": 50}, "large": {"batches": 50, "steps": 252}}
BATCH = 1000


def inputs(size):
    rng = numpy.random.default_rng(7)
    batches, steps = SIZES[size]["batches"], SIZES[size]["steps"]
    z = rng.standard_normal((batches, steps, BATCH))
    return (z, 100.0, 105.0, 0.03, 0.25, 1.0)


def kernel(np, z, s0, strike, rate, sigma, maturity):
    batches, steps, batch = z.shape
    dt = maturity / steps
    drift = (rate - 0.5 * sigma ** 2) * dt
    vol = sigma * math.sqrt(dt)
    total = 0.0
    total_sq = 0.0
    for b in range(batches):
        s = np.full(batch, s0)
        running = np.zeros(batch)
        for t in range(steps):
            s = s * np.exp(drift + vol * z[b, t])
            running += s
        payoff = np.maximum(running / steps - strike, 0.0)
        total += float(np.sum(payoff))
        total_sq += float(np.sum(payoff * payoff))
    n = batches * batch
    mean = total / n
    stderr = math.sqrt((total_sq / n - mean * mean) / n)
    return numpy.array([math.exp(-rate * maturity) * mean, stderr])


@njit
def numba_kernel(z, s0, strike, rate, sigma, maturity):
    batches, steps, batch = z.shape
    dt = maturity / steps
    drift = (rate - 0.5 * sigma ** 2) * dt
    vol = sigma * numpy.sqrt(dt)
    total = 0.0
    total_sq = 0.0
    for b in range(batches):
        for p in range(batch):
            s = s0
            running = 0.0
            for t in range(steps):
                s = s * numpy.exp(drift + vol * z[b, t, p])
                running += s
            payoff = max(running / steps - strike, 0.0)
            total += payoff
            total_sq += payoff * payoff
    n = batches * batch
    mean = total / n
    stderr = numpy.sqrt((total_sq / n - mean * mean) / n)
    return numpy.array([numpy.exp(-rate * maturity) * mean, stderr])


def jax_kernel(jnp, z, s0, strike, rate, sigma, maturity):
    steps = z.shape[1]
    dt = maturity / steps
    logs = jnp.cumsum((rate - 0.5 * sigma ** 2) * dt + sigma * jnp.sqrt(dt) * z, axis=1)
    payoff = jnp.maximum(jnp.mean(s0 * jnp.exp(logs), axis=1) - strike, 0.0)
    n = payoff.size
    mean = jnp.sum(payoff) / n
    stderr = jnp.sqrt((jnp.sum(payoff * payoff) / n - mean * mean) / n)
    return jnp.stack([jnp.exp(-rate * maturity) * mean, stderr])
