"""Rents quoted to the student, USD per GPU-hour: one table for every moe problem that draws one.

No preset prices these chips by the hour (units/data/prices.toml has the lecture's GPU and
GCP's H100), so the problems quote a rent; sharing the table keeps a chip's rent in the same
range from one problem to the next.
"""

RENTS = {
    "h200": (2.0, 2.5, 3.0),
    "b200": (3.5, 4.0, 5.0),
    "gb200_nvl72": (4.0, 5.0, 6.0),
    "gb300_nvl72": (5.0, 6.0, 7.0),
}
