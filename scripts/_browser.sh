# Sourced by scripts/test: headless Chromium and its driver for the MLflow UI browser test, from Debian's
# packages (Playwright's own browser download needs internet this kind of machine does not have).
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing chromium and chromium-driver (apt-get) for the browser test ..." >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2 \
            || echo "could not install chromium; the browser test will fail saying so" >&2
    else
        echo "chromium/chromedriver missing and apt-get (as root) unavailable; the browser test will fail" >&2
    fi
fi
