package clientgo

import (
	"bytes"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// newTypedClient returns client-go's typed clientset for the server under test, speaking protobuf as kube's own
// components and controllers do (request bodies in protobuf; answers in protobuf or JSON).
func newTypedClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	config := restConfig(t)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("build the typed client: %v", err)
	}
	return client
}

func ptr[T any](v T) *T { return &v }

// TestBuiltinTypesInProtobuf writes the built-in types with client-go's typed clients, whose request bodies are
// protobuf (kube-apiserver takes protobuf for every built-in type; Kubernetes' own e2e tests write these so), and
// reads them back: API Priority and Fairness's FlowSchema and PriorityLevelConfiguration (defaulted), the admission
// webhooks and policies (a webhook's rule embedded in its rules, its CA bundle bytes), RBAC bindings that leave
// their apiGroups to the defaults, and a namespace's status and finalizers through its subresources.
func TestBuiltinTypesInProtobuf(t *testing.T) {
	ctx := testContext(t)
	client := newTypedClient(t)
	create := metav1.CreateOptions{}

	// API Priority and Fairness.
	level, err := client.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-level"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr[int32](5),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 10},
				},
			},
		},
	}, create)
	if err != nil {
		t.Fatalf("create a PriorityLevelConfiguration: %v", err)
	}
	if q := level.Spec.Limited.LimitResponse.Queuing; q.Queues != 16 || q.HandSize != 4 || q.QueueLengthLimit != 10 {
		t.Errorf("the priority level's queuing is %+v", q)
	}
	if l := level.Spec.Limited.LendablePercent; l == nil || *l != 0 {
		t.Errorf("the priority level's lendablePercent is not defaulted to 0: %v", l)
	}
	schema, err := client.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-schema"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "e2e-level"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{
					Kind: flowcontrolv1.SubjectKindUser,
					User: &flowcontrolv1.UserSubject{Name: "alice"},
				}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"},
				}},
			}},
		},
	}, create)
	if err != nil {
		t.Fatalf("create a FlowSchema: %v", err)
	}
	if schema.Spec.MatchingPrecedence != 1000 {
		t.Errorf("the FlowSchema's matchingPrecedence is %d, not the default 1000", schema.Spec.MatchingPrecedence)
	}
	if got := schema.Spec.Rules[0].Subjects[0].User; got == nil || got.Name != "alice" {
		t.Errorf("the FlowSchema's subject is %+v", schema.Spec.Rules[0].Subjects[0])
	}

	// The admission webhooks and policies, matching a group nobody serves.
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"nothing.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"things"},
			Scope: ptr(admissionregistrationv1.NamespacedScope),
		},
	}}
	caBundle := []byte("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
	clientConfig := admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: ptr("/validate"), Port: ptr[int32](8443)},
		CABundle: caBundle,
	}
	validating, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-validating"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "validate.e2e.example.com", ClientConfig: clientConfig, Rules: rules,
				SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				FailurePolicy: ptr(admissionregistrationv1.Ignore),
			}},
		}, create)
	if err != nil {
		t.Fatalf("create a ValidatingWebhookConfiguration: %v", err)
	}
	webhook := validating.Webhooks[0]
	if !reflect.DeepEqual(webhook.Rules, rules) {
		t.Errorf("the webhook's rules are %+v, not %+v", webhook.Rules, rules)
	}
	if !bytes.Equal(webhook.ClientConfig.CABundle, caBundle) || *webhook.ClientConfig.Service.Port != 8443 {
		t.Errorf("the webhook's client configuration is %+v", webhook.ClientConfig)
	}
	if webhook.TimeoutSeconds == nil || *webhook.TimeoutSeconds != 10 {
		t.Errorf("the webhook's timeoutSeconds is not defaulted to 10: %v", webhook.TimeoutSeconds)
	}
	mutating, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx,
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-mutating"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "mutate.e2e.example.com", ClientConfig: clientConfig, Rules: rules,
				SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				FailurePolicy: ptr(admissionregistrationv1.Ignore), ReinvocationPolicy: ptr(admissionregistrationv1.IfNeededReinvocationPolicy),
			}},
		}, create)
	if err != nil {
		t.Fatalf("create a MutatingWebhookConfiguration: %v", err)
	}
	if got := mutating.Webhooks[0].ReinvocationPolicy; got == nil || *got != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("the mutating webhook's reinvocationPolicy is %v", got)
	}
	policy, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx,
		&admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rules[0]}},
				},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'forbidden'", Message: "no"}},
			},
		}, create)
	if err != nil {
		t.Fatalf("create a ValidatingAdmissionPolicy: %v", err)
	}
	if got := policy.Spec.MatchConstraints.ResourceRules[0].RuleWithOperations; !reflect.DeepEqual(got, rules[0]) {
		t.Errorf("the policy's resource rule is %+v, not %+v", got, rules[0])
	}
	binding, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx,
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-binding"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        "e2e-policy",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}, create)
	if err != nil {
		t.Fatalf("create a ValidatingAdmissionPolicyBinding: %v", err)
	}
	if binding.Spec.PolicyName != "e2e-policy" {
		t.Errorf("the binding names policy %q", binding.Spec.PolicyName)
	}
	// Parameters chosen by a selector: protobuf carries the reference's empty name too, which names nothing.
	deny := admissionregistrationv1.DenyAction
	selected, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx,
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-selected"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: "e2e-policy",
				ParamRef: &admissionregistrationv1.ParamRef{
					Namespace:               "default",
					Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"params": "e2e"}},
					ParameterNotFoundAction: &deny,
				},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}, create)
	if err != nil {
		t.Fatalf("create a ValidatingAdmissionPolicyBinding with a parameter selector: %v", err)
	}
	if got := selected.Spec.ParamRef.Selector; got == nil || got.MatchLabels["params"] != "e2e" {
		t.Errorf("the binding's parameter selector is %v", got)
	}

	// RBAC bindings whose apiGroups are left to the defaults.
	crb, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-viewers"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "viewers"}},
	}, create)
	if err != nil {
		t.Fatalf("create a ClusterRoleBinding without apiGroups: %v", err)
	}
	if crb.RoleRef.APIGroup != rbacv1.GroupName || crb.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("the binding's apiGroups are not defaulted: %+v %+v", crb.RoleRef, crb.Subjects)
	}

	// A namespace's status and finalizers.
	namespaces := client.CoreV1().Namespaces()
	ns, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName(t, "protobuf")}}, create)
	if err != nil {
		t.Fatalf("create a namespace: %v", err)
	}
	ns.Status.Conditions = []corev1.NamespaceCondition{{Type: "StatusUpdate", Status: corev1.ConditionTrue, Reason: "E2E", Message: "from client-go"}}
	ns, err = namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update the namespace's status: %v", err)
	}
	if len(ns.Status.Conditions) != 1 || ns.Status.Conditions[0].Reason != "E2E" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("the namespace's status is %+v", ns.Status)
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "e2e.example.com/fake")
	ns, err = namespaces.Finalize(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("finalize the namespace: %v", err)
	}
	if want := []corev1.FinalizerName{"kubernetes", "e2e.example.com/fake"}; !reflect.DeepEqual(ns.Spec.Finalizers, want) {
		t.Errorf("the namespace's finalizers are %v, not %v", ns.Spec.Finalizers, want)
	}
}
