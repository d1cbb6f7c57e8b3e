from . import meta_v1_pb2 as _generated_pb2
from . import runtime_pb2 as _generated_pb2_1
from . import runtime_schema_pb2 as _generated_pb2_1_1
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConversionRequest(_message.Message):
    __slots__ = ("uid", "desiredAPIVersion", "objects")
    UID_FIELD_NUMBER: _ClassVar[int]
    DESIREDAPIVERSION_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    uid: str
    desiredAPIVersion: str
    objects: _containers.RepeatedCompositeFieldContainer[_generated_pb2_1.RawExtension]
    def __init__(self, uid: _Optional[str] = ..., desiredAPIVersion: _Optional[str] = ..., objects: _Optional[_Iterable[_Union[_generated_pb2_1.RawExtension, _Mapping]]] = ...) -> None: ...

class ConversionResponse(_message.Message):
    __slots__ = ("uid", "convertedObjects", "result")
    UID_FIELD_NUMBER: _ClassVar[int]
    CONVERTEDOBJECTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    uid: str
    convertedObjects: _containers.RepeatedCompositeFieldContainer[_generated_pb2_1.RawExtension]
    result: _generated_pb2.Status
    def __init__(self, uid: _Optional[str] = ..., convertedObjects: _Optional[_Iterable[_Union[_generated_pb2_1.RawExtension, _Mapping]]] = ..., result: _Optional[_Union[_generated_pb2.Status, _Mapping]] = ...) -> None: ...

class ConversionReview(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: ConversionRequest
    response: ConversionResponse
    def __init__(self, request: _Optional[_Union[ConversionRequest, _Mapping]] = ..., response: _Optional[_Union[ConversionResponse, _Mapping]] = ...) -> None: ...

class CustomResourceColumnDefinition(_message.Message):
    __slots__ = ("name", "type", "format", "description", "priority", "jsonPath")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    JSONPATH_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    format: str
    description: str
    priority: int
    jsonPath: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., description: _Optional[str] = ..., priority: _Optional[int] = ..., jsonPath: _Optional[str] = ...) -> None: ...

class CustomResourceConversion(_message.Message):
    __slots__ = ("strategy", "webhook")
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    strategy: str
    webhook: WebhookConversion
    def __init__(self, strategy: _Optional[str] = ..., webhook: _Optional[_Union[WebhookConversion, _Mapping]] = ...) -> None: ...

class CustomResourceDefinition(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ObjectMeta
    spec: CustomResourceDefinitionSpec
    status: CustomResourceDefinitionStatus
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CustomResourceDefinitionSpec, _Mapping]] = ..., status: _Optional[_Union[CustomResourceDefinitionStatus, _Mapping]] = ...) -> None: ...

class CustomResourceDefinitionCondition(_message.Message):
    __slots__ = ("type", "status", "lastTransitionTime", "reason", "message", "observedGeneration")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LASTTRANSITIONTIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OBSERVEDGENERATION_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    lastTransitionTime: _generated_pb2.Time
    reason: str
    message: str
    observedGeneration: int
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., lastTransitionTime: _Optional[_Union[_generated_pb2.Time, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., observedGeneration: _Optional[int] = ...) -> None: ...

class CustomResourceDefinitionList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _generated_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[CustomResourceDefinition]
    def __init__(self, metadata: _Optional[_Union[_generated_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[CustomResourceDefinition, _Mapping]]] = ...) -> None: ...

class CustomResourceDefinitionNames(_message.Message):
    __slots__ = ("plural", "singular", "shortNames", "kind", "listKind", "categories")
    PLURAL_FIELD_NUMBER: _ClassVar[int]
    SINGULAR_FIELD_NUMBER: _ClassVar[int]
    SHORTNAMES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LISTKIND_FIELD_NUMBER: _ClassVar[int]
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    plural: str
    singular: str
    shortNames: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    listKind: str
    categories: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, plural: _Optional[str] = ..., singular: _Optional[str] = ..., shortNames: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., listKind: _Optional[str] = ..., categories: _Optional[_Iterable[str]] = ...) -> None: ...

class CustomResourceDefinitionSpec(_message.Message):
    __slots__ = ("group", "names", "scope", "versions", "conversion", "preserveUnknownFields")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    CONVERSION_FIELD_NUMBER: _ClassVar[int]
    PRESERVEUNKNOWNFIELDS_FIELD_NUMBER: _ClassVar[int]
    group: str
    names: CustomResourceDefinitionNames
    scope: str
    versions: _containers.RepeatedCompositeFieldContainer[CustomResourceDefinitionVersion]
    conversion: CustomResourceConversion
    preserveUnknownFields: bool
    def __init__(self, group: _Optional[str] = ..., names: _Optional[_Union[CustomResourceDefinitionNames, _Mapping]] = ..., scope: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[CustomResourceDefinitionVersion, _Mapping]]] = ..., conversion: _Optional[_Union[CustomResourceConversion, _Mapping]] = ..., preserveUnknownFields: _Optional[bool] = ...) -> None: ...

class CustomResourceDefinitionStatus(_message.Message):
    __slots__ = ("conditions", "acceptedNames", "storedVersions", "observedGeneration")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTEDNAMES_FIELD_NUMBER: _ClassVar[int]
    STOREDVERSIONS_FIELD_NUMBER: _ClassVar[int]
    OBSERVEDGENERATION_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[CustomResourceDefinitionCondition]
    acceptedNames: CustomResourceDefinitionNames
    storedVersions: _containers.RepeatedScalarFieldContainer[str]
    observedGeneration: int
    def __init__(self, conditions: _Optional[_Iterable[_Union[CustomResourceDefinitionCondition, _Mapping]]] = ..., acceptedNames: _Optional[_Union[CustomResourceDefinitionNames, _Mapping]] = ..., storedVersions: _Optional[_Iterable[str]] = ..., observedGeneration: _Optional[int] = ...) -> None: ...

class CustomResourceDefinitionVersion(_message.Message):
    __slots__ = ("name", "served", "storage", "deprecated", "deprecationWarning", "schema", "subresources", "additionalPrinterColumns", "selectableFields")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVED_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    DEPRECATIONWARNING_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCES_FIELD_NUMBER: _ClassVar[int]
    ADDITIONALPRINTERCOLUMNS_FIELD_NUMBER: _ClassVar[int]
    SELECTABLEFIELDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    served: bool
    storage: bool
    deprecated: bool
    deprecationWarning: str
    schema: CustomResourceValidation
    subresources: CustomResourceSubresources
    additionalPrinterColumns: _containers.RepeatedCompositeFieldContainer[CustomResourceColumnDefinition]
    selectableFields: _containers.RepeatedCompositeFieldContainer[SelectableField]
    def __init__(self, name: _Optional[str] = ..., served: _Optional[bool] = ..., storage: _Optional[bool] = ..., deprecated: _Optional[bool] = ..., deprecationWarning: _Optional[str] = ..., schema: _Optional[_Union[CustomResourceValidation, _Mapping]] = ..., subresources: _Optional[_Union[CustomResourceSubresources, _Mapping]] = ..., additionalPrinterColumns: _Optional[_Iterable[_Union[CustomResourceColumnDefinition, _Mapping]]] = ..., selectableFields: _Optional[_Iterable[_Union[SelectableField, _Mapping]]] = ...) -> None: ...

class CustomResourceSubresourceScale(_message.Message):
    __slots__ = ("specReplicasPath", "statusReplicasPath", "labelSelectorPath")
    SPECREPLICASPATH_FIELD_NUMBER: _ClassVar[int]
    STATUSREPLICASPATH_FIELD_NUMBER: _ClassVar[int]
    LABELSELECTORPATH_FIELD_NUMBER: _ClassVar[int]
    specReplicasPath: str
    statusReplicasPath: str
    labelSelectorPath: str
    def __init__(self, specReplicasPath: _Optional[str] = ..., statusReplicasPath: _Optional[str] = ..., labelSelectorPath: _Optional[str] = ...) -> None: ...

class CustomResourceSubresourceStatus(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CustomResourceSubresources(_message.Message):
    __slots__ = ("status", "scale")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    status: CustomResourceSubresourceStatus
    scale: CustomResourceSubresourceScale
    def __init__(self, status: _Optional[_Union[CustomResourceSubresourceStatus, _Mapping]] = ..., scale: _Optional[_Union[CustomResourceSubresourceScale, _Mapping]] = ...) -> None: ...

class CustomResourceValidation(_message.Message):
    __slots__ = ("openAPIV3Schema",)
    OPENAPIV3SCHEMA_FIELD_NUMBER: _ClassVar[int]
    openAPIV3Schema: JSONSchemaProps
    def __init__(self, openAPIV3Schema: _Optional[_Union[JSONSchemaProps, _Mapping]] = ...) -> None: ...

class ExternalDocumentation(_message.Message):
    __slots__ = ("description", "url")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    description: str
    url: str
    def __init__(self, description: _Optional[str] = ..., url: _Optional[str] = ...) -> None: ...

class JSON(_message.Message):
    __slots__ = ("raw",)
    RAW_FIELD_NUMBER: _ClassVar[int]
    raw: bytes
    def __init__(self, raw: _Optional[bytes] = ...) -> None: ...

class JSONSchemaProps(_message.Message):
    __slots__ = ("id", "schema", "ref", "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "properties", "additionalProperties", "patternProperties", "dependencies", "additionalItems", "definitions", "externalDocs", "example", "nullable", "xKubernetesPreserveUnknownFields", "xKubernetesEmbeddedResource", "xKubernetesIntOrString", "xKubernetesListMapKeys", "xKubernetesListType", "xKubernetesMapType", "xKubernetesValidations")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JSONSchemaProps
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JSONSchemaProps, _Mapping]] = ...) -> None: ...
    class PatternPropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JSONSchemaProps
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JSONSchemaProps, _Mapping]] = ...) -> None: ...
    class DependenciesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JSONSchemaPropsOrStringArray
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JSONSchemaPropsOrStringArray, _Mapping]] = ...) -> None: ...
    class DefinitionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: JSONSchemaProps
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[JSONSchemaProps, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVEMAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVEMINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAXLENGTH_FIELD_NUMBER: _ClassVar[int]
    MINLENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAXITEMS_FIELD_NUMBER: _ClassVar[int]
    MINITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUEITEMS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLEOF_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MAXPROPERTIES_FIELD_NUMBER: _ClassVar[int]
    MINPROPERTIES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ALLOF_FIELD_NUMBER: _ClassVar[int]
    ONEOF_FIELD_NUMBER: _ClassVar[int]
    ANYOF_FIELD_NUMBER: _ClassVar[int]
    NOT_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    ADDITIONALPROPERTIES_FIELD_NUMBER: _ClassVar[int]
    PATTERNPROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    ADDITIONALITEMS_FIELD_NUMBER: _ClassVar[int]
    DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    EXTERNALDOCS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    NULLABLE_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESPRESERVEUNKNOWNFIELDS_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESEMBEDDEDRESOURCE_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESINTORSTRING_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESLISTMAPKEYS_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESLISTTYPE_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESMAPTYPE_FIELD_NUMBER: _ClassVar[int]
    XKUBERNETESVALIDATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    schema: str
    ref: str
    description: str
    type: str
    format: str
    title: str
    default: JSON
    maximum: float
    exclusiveMaximum: bool
    minimum: float
    exclusiveMinimum: bool
    maxLength: int
    minLength: int
    pattern: str
    maxItems: int
    minItems: int
    uniqueItems: bool
    multipleOf: float
    enum: _containers.RepeatedCompositeFieldContainer[JSON]
    maxProperties: int
    minProperties: int
    required: _containers.RepeatedScalarFieldContainer[str]
    items: JSONSchemaPropsOrArray
    allOf: _containers.RepeatedCompositeFieldContainer[JSONSchemaProps]
    oneOf: _containers.RepeatedCompositeFieldContainer[JSONSchemaProps]
    anyOf: _containers.RepeatedCompositeFieldContainer[JSONSchemaProps]
    properties: _containers.MessageMap[str, JSONSchemaProps]
    additionalProperties: JSONSchemaPropsOrBool
    patternProperties: _containers.MessageMap[str, JSONSchemaProps]
    dependencies: _containers.MessageMap[str, JSONSchemaPropsOrStringArray]
    additionalItems: JSONSchemaPropsOrBool
    definitions: _containers.MessageMap[str, JSONSchemaProps]
    externalDocs: ExternalDocumentation
    example: JSON
    nullable: bool
    xKubernetesPreserveUnknownFields: bool
    xKubernetesEmbeddedResource: bool
    xKubernetesIntOrString: bool
    xKubernetesListMapKeys: _containers.RepeatedScalarFieldContainer[str]
    xKubernetesListType: str
    xKubernetesMapType: str
    xKubernetesValidations: _containers.RepeatedCompositeFieldContainer[ValidationRule]
    def __init__(self, id: _Optional[str] = ..., schema: _Optional[str] = ..., ref: _Optional[str] = ..., description: _Optional[str] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., title: _Optional[str] = ..., default: _Optional[_Union[JSON, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusiveMaximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusiveMinimum: _Optional[bool] = ..., maxLength: _Optional[int] = ..., minLength: _Optional[int] = ..., pattern: _Optional[str] = ..., maxItems: _Optional[int] = ..., minItems: _Optional[int] = ..., uniqueItems: _Optional[bool] = ..., multipleOf: _Optional[float] = ..., enum: _Optional[_Iterable[_Union[JSON, _Mapping]]] = ..., maxProperties: _Optional[int] = ..., minProperties: _Optional[int] = ..., required: _Optional[_Iterable[str]] = ..., items: _Optional[_Union[JSONSchemaPropsOrArray, _Mapping]] = ..., allOf: _Optional[_Iterable[_Union[JSONSchemaProps, _Mapping]]] = ..., oneOf: _Optional[_Iterable[_Union[JSONSchemaProps, _Mapping]]] = ..., anyOf: _Optional[_Iterable[_Union[JSONSchemaProps, _Mapping]]] = ..., properties: _Optional[_Mapping[str, JSONSchemaProps]] = ..., additionalProperties: _Optional[_Union[JSONSchemaPropsOrBool, _Mapping]] = ..., patternProperties: _Optional[_Mapping[str, JSONSchemaProps]] = ..., dependencies: _Optional[_Mapping[str, JSONSchemaPropsOrStringArray]] = ..., additionalItems: _Optional[_Union[JSONSchemaPropsOrBool, _Mapping]] = ..., definitions: _Optional[_Mapping[str, JSONSchemaProps]] = ..., externalDocs: _Optional[_Union[ExternalDocumentation, _Mapping]] = ..., example: _Optional[_Union[JSON, _Mapping]] = ..., nullable: _Optional[bool] = ..., xKubernetesPreserveUnknownFields: _Optional[bool] = ..., xKubernetesEmbeddedResource: _Optional[bool] = ..., xKubernetesIntOrString: _Optional[bool] = ..., xKubernetesListMapKeys: _Optional[_Iterable[str]] = ..., xKubernetesListType: _Optional[str] = ..., xKubernetesMapType: _Optional[str] = ..., xKubernetesValidations: _Optional[_Iterable[_Union[ValidationRule, _Mapping]]] = ..., **kwargs) -> None: ...

class JSONSchemaPropsOrArray(_message.Message):
    __slots__ = ("schema", "jSONSchemas")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    JSONSCHEMAS_FIELD_NUMBER: _ClassVar[int]
    schema: JSONSchemaProps
    jSONSchemas: _containers.RepeatedCompositeFieldContainer[JSONSchemaProps]
    def __init__(self, schema: _Optional[_Union[JSONSchemaProps, _Mapping]] = ..., jSONSchemas: _Optional[_Iterable[_Union[JSONSchemaProps, _Mapping]]] = ...) -> None: ...

class JSONSchemaPropsOrBool(_message.Message):
    __slots__ = ("allows", "schema")
    ALLOWS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    allows: bool
    schema: JSONSchemaProps
    def __init__(self, allows: _Optional[bool] = ..., schema: _Optional[_Union[JSONSchemaProps, _Mapping]] = ...) -> None: ...

class JSONSchemaPropsOrStringArray(_message.Message):
    __slots__ = ("schema", "property")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PROPERTY_FIELD_NUMBER: _ClassVar[int]
    schema: JSONSchemaProps
    property: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, schema: _Optional[_Union[JSONSchemaProps, _Mapping]] = ..., property: _Optional[_Iterable[str]] = ...) -> None: ...

class SelectableField(_message.Message):
    __slots__ = ("jsonPath",)
    JSONPATH_FIELD_NUMBER: _ClassVar[int]
    jsonPath: str
    def __init__(self, jsonPath: _Optional[str] = ...) -> None: ...

class ServiceReference(_message.Message):
    __slots__ = ("namespace", "name", "path", "port")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    path: str
    port: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., path: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class ValidationRule(_message.Message):
    __slots__ = ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")
    RULE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGEEXPRESSION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FIELDPATH_FIELD_NUMBER: _ClassVar[int]
    OPTIONALOLDSELF_FIELD_NUMBER: _ClassVar[int]
    rule: str
    message: str
    messageExpression: str
    reason: str
    fieldPath: str
    optionalOldSelf: bool
    def __init__(self, rule: _Optional[str] = ..., message: _Optional[str] = ..., messageExpression: _Optional[str] = ..., reason: _Optional[str] = ..., fieldPath: _Optional[str] = ..., optionalOldSelf: _Optional[bool] = ...) -> None: ...

class WebhookClientConfig(_message.Message):
    __slots__ = ("url", "service", "caBundle")
    URL_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    CABUNDLE_FIELD_NUMBER: _ClassVar[int]
    url: str
    service: ServiceReference
    caBundle: bytes
    def __init__(self, url: _Optional[str] = ..., service: _Optional[_Union[ServiceReference, _Mapping]] = ..., caBundle: _Optional[bytes] = ...) -> None: ...

class WebhookConversion(_message.Message):
    __slots__ = ("clientConfig", "conversionReviewVersions")
    CLIENTCONFIG_FIELD_NUMBER: _ClassVar[int]
    CONVERSIONREVIEWVERSIONS_FIELD_NUMBER: _ClassVar[int]
    clientConfig: WebhookClientConfig
    conversionReviewVersions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, clientConfig: _Optional[_Union[WebhookClientConfig, _Mapping]] = ..., conversionReviewVersions: _Optional[_Iterable[str]] = ...) -> None: ...
