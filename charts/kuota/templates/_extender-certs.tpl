{{/*
Certificates the chart makes and keeps (for the extender; see extender.yaml). Each
returns JSON: {"data": {Secret data, base64}, "renewAfter": Unix time as a string}.
Kept is what `lookup` finds in the release's namespace while it is younger than two
thirds of its validity (a leaf also only while signed by the same CA for the same
names); anything else is made anew. `helm template` cannot look up: always new.
*/}}

{{/*
A CA in Secret .name. Call:
include "kuota.keptCA" (dict "ns" NS "name" SECRET "cn" CN "days" N) | fromJson
*/}}
{{- define "kuota.keptCA" -}}
{{- $now := now | unixEpoch | int64 }}
{{- $out := dict }}
{{- $old := lookup "v1" "Secret" .ns .name }}
{{- if and $old (index ($old.data | default dict) "tls.crt") }}
{{- $renewAfter := index ($old.metadata.annotations | default dict) "kuota.dev/renew-after" | default "0" }}
{{- if lt $now ($renewAfter | int64) }}
{{- $out = dict "data" $old.data "renewAfter" $renewAfter }}
{{- end }}
{{- end }}
{{- if not $out }}
{{- $ca := genCA .cn (int .days) }}
{{- $out = dict "data" (dict "tls.crt" ($ca.Cert | b64enc) "tls.key" ($ca.Key | b64enc))
      "renewAfter" (add $now (div (mul (int .days) 86400 2) 3) | toString) }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/*
A certificate signed by .ca (a kuota.keptCA result) in Secret .name, with the CA as its
ca.crt; .dnsNames may be empty (a client certificate). Call:
include "kuota.keptLeaf" (dict "ns" NS "name" SECRET "cn" CN "dnsNames" LIST "days" N "ca" CA) | fromJson
*/}}
{{- define "kuota.keptLeaf" -}}
{{- $now := now | unixEpoch | int64 }}
{{- $caCert := index .ca.data "tls.crt" }}
{{- $names := printf "%s|%s" .cn (join "," .dnsNames) | sha256sum | trunc 16 }}
{{- $out := dict }}
{{- $old := lookup "v1" "Secret" .ns .name }}
{{- if $old }}
{{- $notes := $old.metadata.annotations | default dict }}
{{- $sameCA := eq (index ($old.data | default dict) "ca.crt" | default "") $caCert }}
{{- $sameNames := eq (index $notes "kuota.dev/certificate-names" | default "") $names }}
{{- $renewAfter := index $notes "kuota.dev/renew-after" | default "0" }}
{{- if and $sameCA $sameNames (lt $now ($renewAfter | int64)) }}
{{- $out = dict "data" $old.data "renewAfter" $renewAfter "names" $names }}
{{- end }}
{{- end }}
{{- if not $out }}
{{- $ca := buildCustomCert $caCert (index .ca.data "tls.key") }}
{{- $leaf := genSignedCert .cn nil .dnsNames (int .days) $ca }}
{{- $out = dict "data" (dict "tls.crt" ($leaf.Cert | b64enc) "tls.key" ($leaf.Key | b64enc)
                             "ca.crt" $caCert)
      "renewAfter" (add $now (div (mul (int .days) 86400 2) 3) | toString) "names" $names }}
{{- end }}
{{- toJson $out }}
{{- end }}
