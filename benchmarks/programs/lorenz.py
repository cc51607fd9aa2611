"""Script: RK4 integration of 1,000 Lorenz-63 systems (a range of rho), Python time loop."""
import numpy

from ._common import njit

NAME = "lorenz"
SIZES = {"small": {"systems": 1000, "steps": 200}, "large": {"systems": 1000, "steps": 5000}}


def inputs(size):
    rng = numpy.random.default_rng(1963)
    m, steps = SIZES[size]["systems"], SIZES[size]["steps"]
    state = rng.normal(1.0, 0.5, size=(3, m))
    rho = numpy.linspace(10.0, 40.0, m)
    return (state[0], state[1], state[2], rho, 10.0, 8.0 / 3.0, 0.001, steps)


def kernel(np, x, y, z, rho, sigma, beta, dt, steps):
    def f(x, y, z):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    z_sum = np.zeros_like(z)
    for _ in range(steps):
        k1x, k1y, k1z = f(x, y, z)
        k2x, k2y, k2z = f(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y, z + 0.5 * dt * k1z)
        k3x, k3y, k3z = f(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y, z + 0.5 * dt * k2z)
        k4x, k4y, k4z = f(x + dt * k3x, y + dt * k3y, z + dt * k3z)
        x = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
        z_sum += z
    return x, y, z, z_sum / steps


@njit
def numba_kernel(x, y, z, rho, sigma, beta, dt, steps):
    m = x.shape[0]
    x, y, z = x.copy(), y.copy(), z.copy()
    z_sum = numpy.zeros(m)
    for i in range(m):
        xi, yi, zi, r = x[i], y[i], z[i], rho[i]
        acc = 0.0
        for _ in range(steps):
            k1x, k1y, k1z = sigma * (yi - xi), xi * (r - zi) - yi, xi * yi - beta * zi
            ax, ay, az = xi + 0.5 * dt * k1x, yi + 0.5 * dt * k1y, zi + 0.5 * dt * k1z
            k2x, k2y, k2z = sigma * (ay - ax), ax * (r - az) - ay, ax * ay - beta * az
            ax, ay, az = xi + 0.5 * dt * k2x, yi + 0.5 * dt * k2y, zi + 0.5 * dt * k2z
            k3x, k3y, k3z = sigma * (ay - ax), ax * (r - az) - ay, ax * ay - beta * az
            ax, ay, az = xi + dt * k3x, yi + dt * k3y, zi + dt * k3z
            k4x, k4y, k4z = sigma * (ay - ax), ax * (r - az) - ay, ax * ay - beta * az
            xi = xi + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
            yi = yi + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
            zi = zi + dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
            acc += zi
        x[i], y[i], z[i], z_sum[i] = xi, yi, zi, acc / steps
    return x, y, z, z_sum


def jax_kernel(jnp, x, y, z, rho, sigma, beta, dt, steps):
    import jax

    def f(x, y, z):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    def step(_, s):
        x, y, z, z_sum = s
        k1x, k1y, k1z = f(x, y, z)
        k2x, k2y, k2z = f(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y, z + 0.5 * dt * k1z)
        k3x, k3y, k3z = f(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y, z + 0.5 * dt * k2z)
        k4x, k4y, k4z = f(x + dt * k3x, y + dt * k3y, z + dt * k3z)
        x = x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
        return x, y, z, z_sum + z
    x, y, z, z_sum = jax.lax.fori_loop(0, steps, step, (x, y, z, jnp.zeros_like(z)))
    return x, y, z, z_sum / steps
