exit 125
