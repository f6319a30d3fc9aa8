"""Real measurement tables shipped inside installed packages, each with a class label; nothing
is downloaded.

===================  =======================================  =====  =============================
loader               source                                   rows   label
===================  =======================================  =====  =============================
load_penguins        palmerpenguins (Gorman, Williams &        333    species (3), or species × sex
                     Fraser 2014), 4 body measurements               (6) with ``by_sex=True``
load_cars            vega_datasets' cars (7 columns)           392    origin (3)
load_seattle_weather vega_datasets' seattle-weather           1,461  weather (5)
load_airports        vega_datasets' airports (lat., long.)     3,372  US state (≥ 30)
load_anes96          statsmodels' anes96 (9 columns)           944    vote (2)
load_fair            statsmodels' fair (7 columns)             6,366  affairs > 0 (2)
load_grunfeld        statsmodels' grunfeld (3 columns)         220    firm (11)
load_modechoice      statsmodels' modechoice (4 columns)       840    travel mode (4)
===================  =======================================  =====  =============================

Rows with a missing value are dropped; columns are returned as recorded (no scaling).
palmerpenguins, vega_datasets and statsmodels come with ``pip install bnpdist[data]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .real import missing_package


@dataclass(frozen=True, eq=False)
class Table:
    """A labelled table: ``labels[i]`` indexes ``label_names``; ``columns`` name ``X``'s columns."""

    X: np.ndarray
    labels: np.ndarray
    columns: list[str]
    label_names: list[str]


def _import(module: str, package: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_package(package) from None


def _table(df, columns, label) -> Table:
    """``df``'s ``columns`` as float64 and the ``label`` series coded by sorted order, rows with
    a missing value in either dropped."""
    label = label.loc[df.index] if hasattr(label, "loc") else label
    keep = df[columns].notna().all(axis=1) & label.notna()
    names, codes = np.unique(label[keep].astype(str).to_numpy(), return_inverse=True)
    return Table(df.loc[keep, columns].to_numpy(dtype=np.float64), codes.astype(np.int64), list(columns),
                 names.tolist())


def load_penguins(by_sex: bool = False) -> Table:
    """Bill length and depth, flipper length, body mass of 333 penguins; label = species (or
    species and sex)."""
    df = _import("palmerpenguins", "palmerpenguins").load_penguins()
    label = df["species"] + ("/" + df["sex"] if by_sex else "")
    return _table(df.dropna(subset=["sex"]), ["bill_length_mm", "bill_depth_mm", "flipper_length_mm",
                                              "body_mass_g"], label)


def _vega(name: str):
    return getattr(_import("vega_datasets", "vega_datasets").data, name)()


def load_cars() -> Table:
    """Miles per gallon, cylinders, displacement, horsepower, weight, acceleration, model year of
    392 cars (rows with a missing value dropped); label = origin (USA, Europe, Japan)."""
    df = _vega("cars")
    return _table(df, ["Miles_per_Gallon", "Cylinders", "Displacement", "Horsepower", "Weight_in_lbs",
                       "Acceleration", "Year"], df["Origin"])


def load_seattle_weather() -> Table:
    """Daily precipitation, maximum and minimum temperature and wind in Seattle 2012–2015; label =
    the day's weather (drizzle, fog, rain, snow, sun): very unequal classes, a skewed column."""
    df = _vega("seattle_weather")
    return _table(df, ["precipitation", "temp_max", "temp_min", "wind"], df["weather"])


def load_airports(min_per_state: int = 10) -> Table:
    """Latitude and longitude of US airports in states with at least ``min_per_state`` of them;
    label = the state."""
    df = _vega("airports")
    counts = df["state"].value_counts()
    df = df[df["state"].isin(counts.index[counts >= min_per_state])]
    return _table(df, ["latitude", "longitude"], df["state"])


def _statsmodels(name: str):
    _import("statsmodels", "statsmodels")
    import importlib
    return importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data


def load_anes96() -> Table:
    """The 1996 American National Election Study: log population, TV news days, the respondent's,
    Clinton's and Dole's left–right placements, party identification, age, education, income;
    label = the vote (Clinton or Dole)."""
    df = _statsmodels("anes96")
    return _table(df, ["logpopul", "TVnews", "selfLR", "ClinLR", "DoleLR", "PID", "age", "educ", "income"],
                  df["vote"])


def load_fair() -> Table:
    """Fair's (1978) affairs survey: marriage rating, age, years married, children, religiousness,
    education, occupation; label = any affair (affairs > 0): a weak label."""
    df = _statsmodels("fair")
    return _table(df, ["rate_marriage", "age", "yrs_married", "children", "religious", "educ",
                       "occupation"], df["affairs"] > 0)


def load_grunfeld() -> Table:
    """Grunfeld's investment data: gross investment, firm value and capital stock of 11 US firms
    over 20 years (skewed, correlated columns); label = the firm."""
    df = _statsmodels("grunfeld")
    return _table(df, ["invest", "value", "capital"], df["firm"])


def load_modechoice() -> Table:
    """Greene's travel-mode data, one row per traveller and mode: terminal time, in-vehicle cost,
    in-vehicle time, generalised cost; label = the mode (air, train, bus, car)."""
    df = _statsmodels("modechoice")
    return _table(df, ["ttme", "invc", "invt", "gc"], df["mode"])
