"""Django format modules (settings.FORMAT_MODULE_PATH): the platform's one date format for English, so a
datetime printed without a filter reads like `{{ value|when }}` (common.formatting.DATETIME_FORMAT)."""
