# Sourced by the integration tests written in shell: a temporary directory for a local
# cluster ($dir, cluster in $dir/c), removed with the cluster on exit, also on failure, and
# fail() for a one-line reason. Needs LODECTL.
lodectl=${LODECTL:?}
dir=$(mktemp -d "/tmp/lode-${LODE_TEST_NAME:-test}.XXXXXX")
cleanup() {
	"$lodectl" local down "$dir/c" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
# clients prove the cluster's key, made by `lodectl local up` in the cluster's directory
export LODE_KEY_FILE=$dir/c/cluster.key
fail() {
	echo "FAIL: $*"
	exit 1
}
