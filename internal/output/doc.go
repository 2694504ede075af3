// Package output prints the documents of kubeadm's machine-readable output,
// the output.kubeadm.k8s.io API (bootstrap tokens, image lists, certificate
// expiration, upgrade plans), in the formats the -o flag of upstream
// kubeadm's commands accepts, which are kubectl's: json, yaml, kyaml,
// go-template and template, go-template-file and templatefile, jsonpath,
// jsonpath-as-json and jsonpath-file.
//
// A command keeps its own human-readable format ("text") and hands every
// other -o value to New; a Printer then prints one document per call, as
// kubectl's printers do (YAML documents after the first one are preceded by
// "---", every KYAML document carries its "---" header, templates and
// JSONPath expressions are applied to each document's JSON form).
package output
