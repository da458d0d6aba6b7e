#!/usr/bin/env bash
# Build the skfed documentation with warnings as errors.
#
#   bash doc/build.sh                      whole site, gallery examples executed
#   bash doc/build.sh --no-plot            fast variant for CI: the gallery pages
#                                          are made without running the examples
#   bash doc/build.sh --clean              start from scratch: also re-run every
#                                          example (sphinx-gallery otherwise skips
#                                          examples that did not change)
#   bash doc/build.sh --fetch-inventories  (needs the internet, once) download the
#                                          intersphinx inventories of Python,
#                                          scikit-learn, numpy, scipy, pandas and
#                                          matplotlib into doc/_intersphinx/ so
#                                          later offline builds link to them
#
# The HTML lands in doc/_build/html. Set SPHINXBUILD to use another
# sphinx-build (default: the one next to the current python). Extra arguments
# after the options go to sphinx-build (e.g. -j 2).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python}
SPHINXBUILD=${SPHINXBUILD:-"$PYTHON -m sphinx"}
plot=1
args=()
for arg in "$@"; do
    case "$arg" in
        --no-plot) plot=0 ;;
        --clean) rm -rf _build generated auto_examples _api_for_stubs.rst \
                     sg_execution_times.rst ;;
        --fetch-inventories)
            mkdir -p _intersphinx
            for pair in python=https://docs.python.org/3/ \
                        sklearn=https://scikit-learn.org/stable/ \
                        numpy=https://numpy.org/doc/stable/ \
                        scipy=https://docs.scipy.org/doc/scipy/ \
                        pandas=https://pandas.pydata.org/docs/ \
                        matplotlib=https://matplotlib.org/stable/; do
                name=${pair%%=*}; url=${pair#*=}
                "$PYTHON" -c "import sys, urllib.request; open(sys.argv[2], 'wb').write(urllib.request.urlopen(sys.argv[1] + 'objects.inv', timeout=30).read())" \
                    "$url" "_intersphinx/$name-objects.inv" \
                    && echo "fetched $name" || echo "could not fetch $name (skipped)"
            done
            exit 0 ;;
        *) args+=("$arg") ;;
    esac
done

# Examples draw with matplotlib's non-interactive backend.
export MPLBACKEND=Agg
# -E: fresh environment every time, so a page or module that appeared since
# the last build is picked up; -W --keep-going: every warning is an error, and
# all of them are reported at once; -n is not used (see conf.py: links to
# scikit-learn and numpy resolve only when their inventories are available).
$SPHINXBUILD -b html -q -E -W --keep-going -D plot_gallery="$plot" \
    ${args[@]+"${args[@]}"} . _build/html
# The math renders offline: MathJax comes from _static (sphinx-mathjax-offline),
# never from a CDN.
if grep -rlE '<script[^>]*src="(https?:)?//[^"]*mathjax' -i --include='*.html' \
        _build/html; then
    echo "error: the pages above load MathJax from the network" >&2
    exit 1
fi
if [ ! -f _build/html/_static/mathjax/tex-chtml.js ]; then
    echo "error: MathJax is missing from _build/html/_static/mathjax" >&2
    exit 1
fi
echo "Built doc/_build/html/index.html"
