#!/bin/bash
# Makes what deploy/compose/kafka-sasl-ssl.yml mounts, in deploy/compose/kafka-sasl/secrets/:
# a CA (ca.crt), the broker's key and certificate for the host name `kafka` (broker.pem),
# the broker's JAAS file and the client.properties of the broker's health check.
# Passwords come from the environment, never from this repository:
#   KAFKA_SASL_PASSWORD         the services' user `roomtax` (also in deploy/compose/.env)
#   KAFKA_BROKER_SASL_PASSWORD  the broker's own inter-broker user `broker`
set -euo pipefail
: "${KAFKA_SASL_PASSWORD:?set KAFKA_SASL_PASSWORD}"
: "${KAFKA_BROKER_SASL_PASSWORD:?set KAFKA_BROKER_SASL_PASSWORD}"
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:3072 -nodes -days 825 -subj "/CN=Roomtax compose Kafka CA" \
    -keyout ca.key -out ca.crt
openssl req -newkey rsa:3072 -nodes -subj "/CN=kafka" -keyout broker.key -out broker.csr
printf 'subjectAltName=DNS:kafka,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > broker.ext
openssl x509 -req -in broker.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile broker.ext -out broker.crt
# Kafka's PEM keystore: the private key (PKCS#8, unencrypted) followed by its certificate chain
openssl pkcs8 -topk8 -nocrypt -in broker.key > broker.pem
cat broker.crt ca.crt >> broker.pem
cat > kafka_server_jaas.conf <<JAAS
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="broker"
  password="${KAFKA_BROKER_SASL_PASSWORD}"
  user_broker="${KAFKA_BROKER_SASL_PASSWORD}"
  user_roomtax="${KAFKA_SASL_PASSWORD}";
};
JAAS
cat > client.properties <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="${KAFKA_BROKER_SASL_PASSWORD}";
ssl.truststore.type=PEM
ssl.truststore.location=/etc/kafka/secrets/ca.crt
PROPS
rm -f broker.csr broker.ext ca.srl
# the broker runs as the image's appuser (uid 1000) and must read the files it mounts: give
# them to that uid when we can, else make them readable (a single-host trial only)
chmod 600 ca.key broker.key
if [ "$(id -u)" = 0 ]; then
    chown 1000:1000 broker.pem kafka_server_jaas.conf client.properties ca.crt
    chmod 600 broker.pem kafka_server_jaas.conf client.properties
    chmod 644 ca.crt broker.crt
else
    chmod 644 broker.pem kafka_server_jaas.conf client.properties ca.crt broker.crt
fi
echo "written to $dir (git-ignored); keep ca.key offline or delete it"
