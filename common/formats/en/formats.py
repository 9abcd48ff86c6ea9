"""English formats (Django reads these for en and en-us): the platform's one date format, "2 Dec 2026, 14:05"."""
from common.formatting import DATE_FORMAT, DATETIME_FORMAT

SHORT_DATE_FORMAT = DATE_FORMAT
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
TIME_FORMAT = "H:i"
MONTH_DAY_FORMAT = "j M"
YEAR_MONTH_FORMAT = "M Y"
USE_THOUSAND_SEPARATOR = False
