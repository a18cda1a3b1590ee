# Sourced by scripts/install_*.sh: install Debian packages (as root, or through sudo).
apt_install() {
  local sudo=""
  if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
