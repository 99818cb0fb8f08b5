#!/bin/sh
# A worker's startup script as terraform/gcp renders it (Compute Engine's startup-script).
set -eu
install -d -m 755 /usr/local/sbin
cat >/usr/local/sbin/castor-node-start <<'END'
#!/bin/sh
set -eu
md=http://metadata.google.internal/computeMetadata/v1/instance
get() { curl -sf -H 'Metadata-Flavor: Google' "$md/$1"; }
install -d -m 700 /run/castor-node
fetch_secret castor-node-token >/run/castor-node/node.token
export CASTOR_URL=http://10.128.0.2:8470
export CASTOR_INSTANCE_ID=$(basename "$(get zone)")/$(get name)
export CASTOR_NODE_TOKEN_FILE=/run/castor-node/node.token
exec /usr/local/bin/castor-node
END
chmod 755 /usr/local/sbin/castor-node-start
cat >/etc/systemd/system/castor-node.service <<'END'
[Unit]
Description=castor-node
[Service]
ExecStart=/usr/local/sbin/castor-node-start
Restart=always
END
systemctl daemon-reload
systemctl enable --now castor-node
