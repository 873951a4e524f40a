"""A minimal Kubernetes API client for the soak, on the standard library only.

It reads the e2e cluster's kubeconfig (a server URL, an inline CA and a bearer
token, as e2e/cluster.sh writes it), keeps one HTTPS connection open and opens
it again after any failure, so an apiserver restart costs the caller failed
requests, never a stuck one: every request has a deadline.

Only loopback servers are accepted: the soak must never talk to a real
cluster by accident.
"""

import base64
import http.client
import json
import re
import ssl
import tempfile
import urllib.parse

# Long enough for a LIST of every copy on a busy machine, short enough that
# a request sent to an apiserver being killed fails within one churn tick.
TIMEOUT_SECONDS = 20


class ApiError(Exception):
    """A request that got an HTTP status other than 2xx."""

    def __init__(self, status, reason, body):
        super().__init__(f"HTTP {status} {reason}: {body[:200]}")
        self.status = status


class Kubeconfig:
    """The server, CA and token of a kubeconfig written by e2e/cluster.sh."""

    def __init__(self, path):
        text = open(path, encoding="utf-8").read()

        def field(name):
            found = re.search(rf"^\s*{name}:\s*(\S+)\s*$", text, re.M)
            if not found:
                raise ValueError(f"{path}: no {name}")
            return found.group(1)

        self.server = field("server")
        self.token = field("token")
        self.ca_pem = base64.b64decode(field("certificate-authority-data"))
        url = urllib.parse.urlsplit(self.server)
        if url.scheme != "https" or url.hostname != "127.0.0.1":
            raise ValueError(f"{path}: the soak talks to https://127.0.0.1 only, not {self.server}")
        self.host, self.port = url.hostname, url.port


class Client:
    """JSON requests to one apiserver over one kept-alive connection."""

    def __init__(self, config):
        self.config = config
        with tempfile.NamedTemporaryFile(suffix=".crt") as ca:
            ca.write(config.ca_pem)
            ca.flush()
            self.tls = ssl.create_default_context(cafile=ca.name)
        self.conn = None

    def request(self, method, path, body=None, content_type="application/json"):
        """Sends one request; returns the decoded JSON body. Raises ApiError on
        a non-2xx status and OSError / http.client errors on transport failure
        (the connection is then dropped and made again by the next call)."""
        headers = {"Authorization": f"Bearer {self.config.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        reused = self.conn is not None
        try:
            reply, payload = self.send(method, path, data, headers)
        except (OSError, http.client.HTTPException):
            self.close()
            # A kept-alive connection may have died with the apiserver
            # since its last use; a read is safe to send again, once.
            if not (reused and method == "GET"):
                raise
            try:
                reply, payload = self.send(method, path, data, headers)
            except (OSError, http.client.HTTPException):
                self.close()
                raise
        if not 200 <= reply.status < 300:
            raise ApiError(reply.status, reply.reason, payload.decode(errors="replace"))
        return json.loads(payload) if payload else None

    def send(self, method, path, data, headers):
        if self.conn is None:
            self.conn = http.client.HTTPSConnection(
                self.config.host, self.config.port, context=self.tls, timeout=TIMEOUT_SECONDS
            )
        self.conn.request(method, path, body=data, headers=headers)
        reply = self.conn.getresponse()
        return reply, reply.read()

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # The few calls the soak makes.

    def list(self, path, selector=None):
        query = "?" + urllib.parse.urlencode({"labelSelector": selector}) if selector else ""
        return self.request("GET", path + query)["items"]

    def create(self, path, obj):
        return self.request("POST", path, obj)

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, "application/merge-patch+json")

    def delete(self, path):
        return self.request("DELETE", path)


def configmaps(namespace, name=None):
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    return f"{path}/{name}" if name else path


def namespace(name=None):
    return f"/api/v1/namespaces/{name}" if name else "/api/v1/namespaces"
